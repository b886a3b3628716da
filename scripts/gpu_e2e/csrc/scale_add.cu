// out = x * alpha + y, elementwise, float32, on the current CUDA stream.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <initializer_list>

__global__ void scale_add_kernel(float *out, const float *x, const float *y, float alpha,
                                 int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = x[i] * alpha + y[i];
}

void scale_add(at::Tensor &out, const at::Tensor &x, const at::Tensor &y, double alpha) {
  for (const at::Tensor *t : std::initializer_list<const at::Tensor *>{&out, &x, &y}) {
    TORCH_CHECK(t->is_cuda() && t->is_contiguous() && t->scalar_type() == at::kFloat,
                "scale_add: tensors must be contiguous float32 CUDA tensors");
    TORCH_CHECK(t->sizes() == x.sizes(), "scale_add: tensors must have the same shape");
  }
  const c10::cuda::OptionalCUDAGuard guard(x.device());
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  scale_add_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      out.data_ptr<float>(), x.data_ptr<float>(), y.data_ptr<float>(),
      static_cast<float>(alpha), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
