"""Benchmarks of kernels-community/relu (run with `kernels benchmark`)."""

import torch

from kernels.benchmark import Benchmark


class ReluBenchmark(Benchmark):
    seed = 42

    def setup(self):
        self.x = torch.randn(1024, 1024, device=self.device, dtype=torch.float32)
        self.out = torch.empty_like(self.x)

    def setup_relu_small(self):
        self.x = torch.randn(8, 256, device=self.device, dtype=torch.float16)
        self.out = torch.empty_like(self.x)

    def benchmark_relu(self):
        self.kernel.relu(self.out, self.x)

    def verify_relu(self):
        return torch.relu(self.x)

    def benchmark_relu_small(self):
        self.kernel.relu(self.out, self.x)

    def verify_relu_small(self):
        return torch.relu(self.x)
