// Float64 copies of GEMM operands and outputs for the probes' result checks (probes/compute/f64_copy.py).
//
// One kernel per storage kind, all in this one module: CuPy's own gathers and casts compile an element-wise
// kernel per dtype pair and layout on first use, 90 NVRTC compiles (10.8 s) in a cold run of the library GEMM
// probes (profiles/h200-sxm/2026-11-29-sparse-sweep, cupy_compiles), where this module is one compile, made
// ahead on a thread. f64_<kind> copies the rows `rows` (all rows where rows is null) of a 2-D array with element
// strides s0, s1 (any layout: a transposed view too) into a C-contiguous nr x nc float64 array. bf16 comes as
// uint16 bit patterns, fp8 (E4M3) as uint8 codes decoded through `table` (256 values; CuPy has neither dtype).

typedef long long i64;

__device__ __forceinline__ double from_f16(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// float32 bits to double, subnormals kept: the float-to-double convert flushes them here (measured on an H200: the
// module is compiled as hwprobe.kernels compiles every module), so they are scaled from their integer mantissa.
__device__ __forceinline__ double from_f32_bits(unsigned u) {
  if ((u & 0x7f800000u) == 0) {
    const double m = (double)(u & 0x7fffffu) * 0x1p-149;
    return (u >> 31) ? -m : m;
  }
  return (double)__uint_as_float(u);
}

__device__ __forceinline__ double from_bf16(unsigned short h) { return from_f32_bits((unsigned)h << 16); }

#define F64_COPY(KIND, T, CONVERT)                                                                          \
  extern "C" __global__ void f64_##KIND(const T* __restrict__ x, i64 s0, i64 s1, const i64* __restrict__ rows, \
                                        i64 nr, i64 nc, const double* __restrict__ table,                   \
                                        double* __restrict__ out) {                                          \
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < nr * nc; i += (i64)gridDim.x * blockDim.x) { \
      const i64 r = i / nc, c = i - r * nc;                                                                   \
      const T v = x[(rows ? rows[r] : r) * s0 + c * s1];                                                      \
      out[i] = (CONVERT);                                                                                     \
    }                                                                                                         \
  }

F64_COPY(float64, double, v)
F64_COPY(float32, unsigned, from_f32_bits(v))
F64_COPY(float16, unsigned short, from_f16(v))
F64_COPY(bf16, unsigned short, from_bf16(v))
F64_COPY(int32, int, (double)v)
F64_COPY(int8, signed char, (double)v)
F64_COPY(fp8, unsigned char, table[v])
