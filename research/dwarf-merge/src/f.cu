__device__ __forceinline__ float f_tw(float x) { return 2.0f * x + 1.0f; }
extern "C" __global__ void f_k(float *o, int n) { float a[4] = {1,2,3,4}; o[threadIdx.x] = f_tw(o[n]) + f_tw(a[n & 3]); }
