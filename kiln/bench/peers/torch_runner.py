"""PyTorch eager: the same architectures and optimizers, the usual training loop; bf16 through
torch.autocast, channels_last through torch.channels_last memory format."""

from . import synthetic

AVAILABLE = None


def _model(torch, model):
    nn = torch.nn
    if model == "mnist_cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
        nn.Linear(2304, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10))


def unsupported(model, data_format, mode, precision):
    return None


def prepare(model, data_format, mode, precision):
    import torch
    net = _model(torch, model)
    x_np, y_np = synthetic.batch(model, "channels_first")  # torch tensors are NCHW logically
    x = torch.from_numpy(x_np)
    target = torch.from_numpy(y_np.argmax(1))
    if data_format == "channels_last":
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    if model == "mnist_cnn":
        optimizer = torch.optim.Adadelta(net.parameters(), lr=1.0, rho=0.95, eps=1e-7)
    else:
        optimizer = torch.optim.RMSprop(net.parameters(), lr=1e-4, alpha=0.9, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if precision == "bf16" \
        else (lambda: torch.autocast("cpu", enabled=False))

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn(net(x), target)
        loss.backward()
        optimizer.step()

    def infer_step():
        with torch.inference_mode(), autocast():
            return net(x)

    if mode == "train":
        net.train()
        return train_step
    net.eval()
    return infer_step
