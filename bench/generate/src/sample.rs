//! Picking the next token from masked logits: greedy (argmax) or temperature plus top-p
//! (nucleus) sampling with a seeded PRNG.
//!
//! Masked-out tokens hold `-inf` (from `sieve_kernels::apply_mask_f32`) and are never
//! picked. Cost: one pass over the vocabulary for greedy; for top-p, a pass plus a sort of
//! the finite logits (at most the allowed tokens).

/// How tokens are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// The highest logit (lowest id on ties).
    Greedy,
    /// Softmax of `logits / temperature`, restricted to the smallest set of most likely
    /// tokens whose probabilities sum to at least `top_p`.
    TopP {
        /// Above 0.
        temperature: f32,
        /// In `(0, 1]`.
        top_p: f32,
    },
}

/// SplitMix64: a small seeded PRNG, one per sequence.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The chosen token id, or `None` when every logit is `-inf` or NaN (nothing allowed).
pub fn sample(logits: &[f32], sampling: Sampling, rng: &mut Rng) -> Option<u32> {
    match sampling {
        Sampling::Greedy => argmax(logits),
        Sampling::TopP { temperature, top_p } => top_p_sample(logits, temperature, top_p, rng),
    }
}

fn argmax(logits: &[f32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l.is_finite() && best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.map(|(i, _)| i as u32)
}

fn top_p_sample(logits: &[f32], temperature: f32, top_p: f32, rng: &mut Rng) -> Option<u32> {
    // Tokens more than CUTOFF·T below the best have probability below e^-25 of the best's:
    // dropping them moves at most 49,152 · 1.4e-11 ≈ 7e-7 of the mass for SmolLM2, and saves
    // sorting the whole vocabulary (about 1 ms per sequence per step unconstrained).
    const CUTOFF: f32 = 25.0;
    let best = logits
        .iter()
        .copied()
        .filter(|l| l.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    let floor = best - CUTOFF * temperature.max(1e-6);
    let mut cands: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite() && **l >= floor)
        .map(|(i, &l)| (i as u32, l))
        .collect();
    if cands.is_empty() {
        return None;
    }
    cands.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let t = f64::from(temperature.max(1e-6));
    let max = f64::from(cands[0].1);
    let weights: Vec<f64> = cands
        .iter()
        .map(|&(_, l)| ((f64::from(l) - max) / t).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    // The nucleus: the shortest prefix (by probability) reaching top_p.
    let mut keep = 0;
    let mut acc = 0.0;
    for w in &weights {
        keep += 1;
        acc += w / total;
        if acc >= f64::from(top_p) {
            break;
        }
    }
    let nucleus: f64 = weights[..keep].iter().sum();
    let mut r = rng.next_f64() * nucleus;
    for (i, w) in weights[..keep].iter().enumerate() {
        if r < *w {
            return Some(cands[i].0);
        }
        r -= w;
    }
    Some(cands[keep - 1].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_skips_masked_and_empty_is_none() {
        let l = [f32::NEG_INFINITY, 1.0, 3.0, f32::NEG_INFINITY];
        assert_eq!(sample(&l, Sampling::Greedy, &mut Rng::new(0)), Some(2));
        let none = [f32::NEG_INFINITY; 3];
        assert_eq!(sample(&none, Sampling::Greedy, &mut Rng::new(0)), None);
        let s = Sampling::TopP {
            temperature: 1.0,
            top_p: 0.9,
        };
        assert_eq!(sample(&none, s, &mut Rng::new(0)), None);
    }

    #[test]
    fn top_p_stays_in_the_nucleus_and_is_seeded() {
        // Token 0 holds almost all the mass: top_p 0.5 must always pick it.
        let l = [10.0, 0.0, 0.0, f32::NEG_INFINITY];
        let s = Sampling::TopP {
            temperature: 1.0,
            top_p: 0.5,
        };
        let mut rng = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(sample(&l, s, &mut rng), Some(0));
        }
        let flat = [0.0f32; 16];
        let s = Sampling::TopP {
            temperature: 1.0,
            top_p: 1.0,
        };
        let a: Vec<_> = (0..20)
            .scan(Rng::new(3), |r, _| sample(&flat, s, r))
            .collect();
        let b: Vec<_> = (0..20)
            .scan(Rng::new(3), |r, _| sample(&flat, s, r))
            .collect();
        assert_eq!(a, b);
        assert!(a.iter().any(|&t| t != a[0]));
    }
}
