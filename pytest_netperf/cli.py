def main() -> int:
    print("netperf")
    return 0
