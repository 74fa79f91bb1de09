//! Zero-copy views of the caller's arrays: int32 bitmasks and float logits, from numpy
//! arrays (or anything with `__array_interface__`) and CPU torch tensors (`data_ptr()`).
//!
//! Invariants: a view is made only of a C-contiguous, writable buffer of the expected element
//! type whose shape was read from the object itself (never from a number the caller passes),
//! and the object is kept alive (borrowed) for as long as the view is used. Writing into it
//! while the GIL is released is what numpy and torch kernels do too; a caller that mutates
//! the same array from another thread at the same time races, as with any of those.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Element types the views understand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// int32 or uint32 (mask words).
    I32,
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

impl Elem {
    fn size(self) -> usize {
        match self {
            Elem::I32 | Elem::F32 => 4,
            Elem::F16 | Elem::Bf16 => 2,
        }
    }
}

/// A borrowed, C-contiguous 1-D or 2-D array: `rows` rows of `cols` elements at `ptr`.
#[derive(Clone, Copy, Debug)]
pub struct View {
    pub ptr: usize,
    pub rows: usize,
    pub cols: usize,
    pub elem: Elem,
}

// SAFETY: a `View` is an address and a shape; it is dereferenced only through the methods
// below, whose callers guarantee exclusive use of the rows they touch (see the module docs).
unsafe impl Send for View {}
// SAFETY: as above.
unsafe impl Sync for View {}

impl View {
    /// The buffer's byte range.
    fn bytes(&self) -> core::ops::Range<usize> {
        let len = self.rows * self.cols * self.elem.size();
        self.ptr..self.ptr.saturating_add(len)
    }

    /// Do the two buffers share a byte (empty buffers share none)?
    pub fn overlaps(&self, other: &View) -> bool {
        let (a, b) = (self.bytes(), other.bytes());
        !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end
    }

    /// Row `r` as mask words.
    ///
    /// # Safety
    /// `self.elem == Elem::I32`, `r < self.rows`, the object is alive, and no other
    /// reference to row `r` is used at the same time.
    pub unsafe fn row_u32<'a>(&self, r: usize) -> &'a mut [u32] {
        debug_assert!(self.elem == Elem::I32 && r < self.rows);
        // SAFETY: the caller's contract; the buffer holds `rows * cols` elements of 4 bytes,
        // suitably aligned (numpy and torch align int32 buffers to 4).
        unsafe {
            core::slice::from_raw_parts_mut((self.ptr as *mut u32).add(r * self.cols), self.cols)
        }
    }

    /// Rows `r ..< r + k` as one run of mask words (`k * cols`).
    ///
    /// # Safety
    /// `self.elem == Elem::I32`, `r + k <= self.rows`, the object is alive, and no other
    /// reference to those rows is used at the same time.
    pub unsafe fn rows_u32<'a>(&self, r: usize, k: usize) -> &'a mut [u32] {
        debug_assert!(self.elem == Elem::I32 && r + k <= self.rows);
        // SAFETY: as `row_u32`: the rows are consecutive in a C-contiguous buffer.
        unsafe {
            core::slice::from_raw_parts_mut(
                (self.ptr as *mut u32).add(r * self.cols),
                k * self.cols,
            )
        }
    }

    /// The whole buffer as `rows * cols` elements of `T`.
    ///
    /// # Safety
    /// `T` has the size of `self.elem`, the object is alive, and nothing else uses the buffer
    /// at the same time.
    pub unsafe fn all<'a, T>(&self) -> &'a mut [T] {
        // SAFETY: the caller's contract.
        unsafe { core::slice::from_raw_parts_mut(self.ptr as *mut T, self.rows * self.cols) }
    }
}

/// The element type a numpy `typestr` names, if one of ours (native little-endian only).
fn numpy_elem(typestr: &str) -> Option<Elem> {
    if cfg!(target_endian = "big") {
        return None;
    }
    match typestr {
        "<i4" | "<u4" => Some(Elem::I32),
        "<f4" => Some(Elem::F32),
        "<f2" => Some(Elem::F16),
        _ => None,
    }
}

/// The element type a torch dtype (by name) is, if one of ours.
fn torch_elem(dtype: &str) -> Option<Elem> {
    match dtype {
        "torch.int32" | "torch.uint32" => Some(Elem::I32),
        "torch.float32" => Some(Elem::F32),
        "torch.float16" => Some(Elem::F16),
        "torch.bfloat16" => Some(Elem::Bf16),
        _ => None,
    }
}

/// `(rows, cols)` of a 1-D (one row) or 2-D shape.
fn shape2(shape: &[usize], what: &str) -> PyResult<(usize, usize)> {
    match *shape {
        [c] => Ok((1, c)),
        [r, c] => Ok((r, c)),
        _ => Err(PyValueError::new_err(format!(
            "{what} must be 1-D or 2-D, not {}-D",
            shape.len()
        ))),
    }
}

/// The view of a buffer at `ptr`, unless it is NULL while not empty or misaligned for `elem`.
fn checked(ptr: usize, rows: usize, cols: usize, elem: Elem, what: &str) -> PyResult<View> {
    if ptr == 0 && rows * cols != 0 {
        return Err(PyValueError::new_err(format!("{what} has no data")));
    }
    if !ptr.is_multiple_of(elem.size()) {
        return Err(PyValueError::new_err(format!("{what} is misaligned")));
    }
    Ok(View {
        ptr,
        rows,
        cols,
        elem,
    })
}

fn view_from_array_interface(ai: &Bound<'_, PyDict>, what: &str) -> PyResult<View> {
    let get = |k: &str| {
        ai.get_item(k)?
            .ok_or_else(|| PyTypeError::new_err(format!("{what}: __array_interface__ lacks {k}")))
    };
    let typestr: String = get("typestr")?.extract()?;
    let elem = numpy_elem(&typestr).ok_or_else(|| {
        PyTypeError::new_err(format!("{what}: unsupported element type {typestr}"))
    })?;
    let shape: Vec<usize> = get("shape")?.extract()?;
    let (rows, cols) = shape2(&shape, what)?;
    let strides = get("strides").ok().filter(|s| !s.is_none());
    if let Some(strides) = strides {
        let strides: Vec<isize> = strides.extract()?;
        let size = elem.size() as isize;
        let contiguous = match strides[..] {
            [s] => s == size || cols <= 1,
            [s0, s1] => (s1 == size || cols <= 1) && (s0 == size * cols as isize || rows <= 1),
            _ => false,
        };
        if !contiguous {
            return Err(PyValueError::new_err(format!(
                "{what} must be C-contiguous"
            )));
        }
    }
    let data = get("data")?;
    let data = data.cast::<PyTuple>()?;
    let ptr: usize = data.get_item(0)?.extract()?;
    let readonly: bool = data.get_item(1)?.extract()?;
    if readonly {
        return Err(PyValueError::new_err(format!("{what} is read-only")));
    }
    checked(ptr, rows, cols, elem, what)
}

fn view_from_torch(t: &Bound<'_, PyAny>, what: &str) -> PyResult<View> {
    let device: String = t.getattr("device")?.getattr("type")?.extract()?;
    if device != "cpu" {
        return Err(PyValueError::new_err(format!(
            "{what} is on {device}: sieve fills and applies masks in CPU memory (fill a CPU \
             bitmask, then move it with .to(device, non_blocking=True))"
        )));
    }
    let dtype: String = t.getattr("dtype")?.str()?.extract()?;
    let elem = torch_elem(&dtype)
        .ok_or_else(|| PyTypeError::new_err(format!("{what}: unsupported dtype {dtype}")))?;
    if !t.call_method0("is_contiguous")?.extract::<bool>()? {
        return Err(PyValueError::new_err(format!("{what} must be contiguous")));
    }
    let shape: Vec<usize> = t.getattr("shape")?.extract()?;
    let (rows, cols) = shape2(&shape, what)?;
    let ptr: usize = t.call_method0("data_ptr")?.extract()?;
    checked(ptr, rows, cols, elem, what)
}

/// A view of `obj`, a numpy array (or any `__array_interface__` exporter) or a CPU torch
/// tensor. `what` names the argument in errors.
pub fn view(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<View> {
    if obj.hasattr("data_ptr")? && obj.hasattr("is_contiguous")? {
        return view_from_torch(obj, what);
    }
    match obj.getattr("__array_interface__") {
        Ok(ai) => view_from_array_interface(ai.cast::<PyDict>()?, what),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be a numpy array or a CPU torch tensor, not {}",
            obj.get_type().name()?
        ))),
    }
}

/// A view of an int32 bitmask whose rows hold at least `words` words.
pub fn bitmask(obj: &Bound<'_, PyAny>, words: usize) -> PyResult<View> {
    let v = view(obj, "bitmask")?;
    if v.elem != Elem::I32 {
        return Err(PyTypeError::new_err("bitmask must be int32"));
    }
    if v.cols < words {
        return Err(PyValueError::new_err(format!(
            "bitmask rows have {} words; the vocabulary needs {words}",
            v.cols
        )));
    }
    Ok(v)
}
