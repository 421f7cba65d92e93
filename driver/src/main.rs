fn main() {
    println!("netperf-driver 0.1.0");
}
