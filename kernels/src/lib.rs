//! sieve-kernels: mask kernels. (Implementation by the kernels helper.)
#![no_std]
