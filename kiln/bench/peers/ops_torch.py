"""PyTorch: `x + b.view(1, C, 1, 1)` (x in torch.channels_last memory format for
channels_last), and its autograd backward from a given dy, repeated on one retained graph."""

from . import ops_shapes

AVAILABLE = None


def unsupported(model, data_format, mode, precision):
    return ops_shapes.check(model, mode, precision)


def prepare(model, data_format, mode, precision, compile=False):
    import torch
    x_np, bias_np, dy_np = ops_shapes.data("channels_first")  # torch tensors are NCHW
    x, dy = torch.from_numpy(x_np), torch.from_numpy(dy_np)
    if data_format == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
        dy = dy.contiguous(memory_format=torch.channels_last)
    bias = torch.from_numpy(bias_np)

    def add(x, bias):
        return x + bias.view(1, -1, 1, 1)

    if compile:
        add = torch.compile(add)
    if mode == "forward":
        def forward():
            with torch.no_grad():
                return add(x, bias)
        return forward
    x.requires_grad_(True)
    bias.requires_grad_(True)
    y = add(x, bias)

    def backward():
        return torch.autograd.grad(y, (x, bias), grad_outputs=dy, retain_graph=True)

    return backward
