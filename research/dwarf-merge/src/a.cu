extern "C" __device__ float b_scale(float x, int k);
__device__ int a_hits;
__device__ __noinline__ float a_len2(float x, float y) {
  float s = x * x + y * y;
  return s > 1.0f ? 1.0f / s : s;
}
extern "C" __global__ void a_kernel(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float t = a_len2(in[i], 2.0f);
    out[i] = b_scale(t, i);
    atomicAdd(&a_hits, 1);
  }
}
