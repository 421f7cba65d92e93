//! Latency histograms: HdrHistogram in nanoseconds (1 µs … 60 s, 3 significant digits),
//! merged losslessly and serialized as V2 deflate + base64 for the Python side.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Lowest discernible value: 1 ns, so every value from 1 µs up keeps 3 significant
/// digits (a lowest value of 1 µs would give 512 ns buckets below 1 ms).
pub const LOWEST_NS: u64 = 1;
/// Highest trackable value: 60 s (larger values are clamped).
pub const HIGHEST_NS: u64 = 60_000_000_000;
/// Significant decimal digits.
pub const SIGFIG: u8 = 3;

/// A full-precision latency histogram.
pub type LatencyHistogram = Histogram<u64>;
/// A compact histogram for per-interval percentiles (2 significant digits).
pub type IntervalHistogram = Histogram<u32>;

/// A new, empty full-precision histogram.
pub fn new_latency() -> LatencyHistogram {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).expect("static bounds are valid")
}

/// A new, empty interval histogram.
pub fn new_interval() -> IntervalHistogram {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, 2).expect("static bounds are valid")
}

/// Record `value_ns`, clamping to the trackable range.
#[inline]
pub fn record(h: &mut LatencyHistogram, value_ns: u64) {
    h.saturating_record(value_ns.min(HIGHEST_NS));
}

/// Record into an interval histogram, clamping to the trackable range.
#[inline]
pub fn record_interval(h: &mut IntervalHistogram, value_ns: u64) {
    h.saturating_record(value_ns.min(HIGHEST_NS));
}

/// Add every count of `from` into `into` (same bounds, so no precision is lost).
pub fn merge(into: &mut LatencyHistogram, from: &LatencyHistogram) {
    into.add(from).expect("histograms share bounds");
}

/// Standard V2 compressed encoding, base64 (what `HdrHistogram.decode()` reads).
pub fn encode_base64(h: &LatencyHistogram) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing to memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Inverse of [`encode_base64`].
pub fn decode_base64(text: &str) -> Result<LatencyHistogram, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| e.to_string())?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("{e:?}"))
}

/// Summary statistics plus the encoded histogram, as in the JSON contract.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencyStats {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub max: u64,
    pub stdev: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub histogram: String,
}

/// Summarize `h` (all zeros when empty).
pub fn summarize(h: &LatencyHistogram) -> LatencyStats {
    let empty = h.is_empty();
    let q = |p: f64| if empty { 0 } else { h.value_at_quantile(p) };
    LatencyStats {
        count: h.len(),
        min: if empty { 0 } else { h.min() },
        mean: if empty { 0.0 } else { h.mean() },
        max: if empty { 0 } else { h.max() },
        stdev: if empty { 0.0 } else { h.stdev() },
        p50: q(0.50),
        p90: q(0.90),
        p99: q(0.99),
        p999: q(0.999),
        histogram: encode_base64(h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = new_latency();
        let mut b = new_latency();
        let mut all = new_latency();
        for i in 1..=10_000u64 {
            let v = i * 997 % 5_000_000 + 1_000;
            if i % 3 == 0 {
                record(&mut a, v)
            } else {
                record(&mut b, v)
            }
            record(&mut all, v);
        }
        let mut merged = new_latency();
        merge(&mut merged, &a);
        merge(&mut merged, &b);
        assert_eq!(merged.len(), all.len());
        for p in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(merged.value_at_quantile(p), all.value_at_quantile(p));
        }
        assert_eq!(merged, all);
    }

    #[test]
    fn three_significant_digits_over_the_range() {
        let mut h = new_latency();
        for v in [1_000u64, 4_321, 23_456, 123_456, 9_876_543, 59_000_000_000] {
            h.reset();
            record(&mut h, v);
            let got = h.value_at_quantile(0.5) as f64;
            assert!((got - v as f64).abs() / (v as f64) < 1e-3, "{v} -> {got}");
        }
    }

    #[test]
    fn clamps_out_of_range_values() {
        let mut h = new_latency();
        record(&mut h, 10 * HIGHEST_NS);
        record(&mut h, 0);
        assert_eq!(h.len(), 2);
        assert!(h.max() >= HIGHEST_NS / 2);
    }

    #[test]
    fn base64_round_trip() {
        let mut h = new_latency();
        for v in [1_500u64, 2_000, 80_000, 80_000, 3_000_000] {
            record(&mut h, v);
        }
        let text = encode_base64(&h);
        assert!(
            text.starts_with("HISTF"),
            "V2 compressed cookie, got {}",
            &text[..8]
        );
        let back = decode_base64(&text).unwrap();
        assert_eq!(back, h);
        let s = summarize(&h);
        assert_eq!((s.count, s.p50), (5, h.value_at_quantile(0.5)));
    }

    #[test]
    fn empty_summary_is_zero() {
        let s = summarize(&new_latency());
        assert_eq!((s.count, s.min, s.max, s.p99), (0, 0, 0, 0));
    }
}
