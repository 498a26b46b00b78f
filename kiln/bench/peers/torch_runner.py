"""PyTorch: the same architectures and optimizers, the usual training loop; bf16 through
torch.autocast, channels_last through torch.channels_last memory format. Eager by default;
with compile=True the model is torch.compile(model) (compiled on the first, untimed call)."""

from . import synthetic, torch_models

AVAILABLE = None


def _resnet20(torch):
    """resnet_v1(depth=20) as kiln.bench.models has it: Keras' BatchNormalization defaults
    (eps 1e-3, momentum 0.99 = PyTorch's 0.01), he_normal kernels, zero biases, and Keras'
    'same' padding: a strided 3x3 conv pads one row and column at the bottom and right only."""
    nn = torch.nn

    def conv(in_channels, out_channels, kernel_size=3, stride=1):
        layer = nn.Conv2d(in_channels, out_channels, kernel_size, stride,
                          padding=kernel_size // 2 if stride == 1 else 0)
        fan_in = in_channels * kernel_size * kernel_size
        std = (2.0 / fan_in) ** 0.5  # Keras he_normal: a normal truncated at 2 stddev
        nn.init.trunc_normal_(layer.weight, std=std, a=-2 * std, b=2 * std)
        nn.init.zeros_(layer.bias)
        if stride == 1 or kernel_size == 1:  # a strided 1x1 conv needs no padding
            return layer
        # Keras 'same' with stride 2 on an even size (32 -> 16, 16 -> 8): bottom / right only
        return nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), layer)

    def bn(channels):
        return nn.BatchNorm2d(channels, eps=1e-3, momentum=0.01)

    class Block(nn.Module):
        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            self.body = nn.Sequential(conv(in_channels, out_channels, stride=stride),
                                      bn(out_channels), nn.ReLU(),
                                      conv(out_channels, out_channels), bn(out_channels))
            self.shortcut = (conv(in_channels, out_channels, 1, stride) if stride != 1
                             else nn.Identity())

        def forward(self, x):
            return torch.relu(self.shortcut(x) + self.body(x))

    blocks = [conv(3, 16), bn(16), nn.ReLU()]
    in_channels = 16
    for stack, filters in enumerate((16, 32, 64)):
        for block in range(3):
            blocks.append(Block(in_channels, filters, 2 if stack > 0 and block == 0 else 1))
            in_channels = filters
    dense = nn.Linear(64, 10)
    std = (2.0 / 64) ** 0.5
    nn.init.trunc_normal_(dense.weight, std=std, a=-2 * std, b=2 * std)
    nn.init.zeros_(dense.bias)
    return nn.Sequential(*blocks, nn.AvgPool2d(8), nn.Flatten(), dense)


def _model(torch, model):
    nn = torch.nn
    if model in ("imdb_lstm", "imdb_gru"):
        return torch_models.imdb_rnn(torch, "LSTM" if model == "imdb_lstm" else "GRU")
    if model == "imdb_cnn":
        return torch_models.imdb_cnn(torch)
    if model == "transformer_encoder":
        return torch_models.transformer_encoder(torch)
    if model in ("resnet50", "efficientnet_b0", "resnet50_finetune"):
        return getattr(torch_models, model)(torch, synthetic.IMAGE_CLASSES[model])
    if model == "resnet20":
        return _resnet20(torch)
    if model == "mobilenet_v2":
        return torch_models.mobilenet_v2(torch)
    if model == "unet":
        return torch_models.unet(torch)
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


ADAM = ("resnet20", "mobilenet_v2", "unet", "resnet50", "efficientnet_b0",
        "resnet50_finetune")


def unsupported(model, data_format, mode, precision):
    return None


def prepare(model, data_format, mode, precision, compile=False):
    import torch
    net = _model(torch, model)
    x_np, y_np = synthetic.batch(model, "channels_first")  # torch tensors are NCHW logically
    x = torch.from_numpy(x_np)
    text = model in synthetic.TOKENS
    segmentation = model in synthetic.SEGMENTATION
    classes = model in synthetic.TOKEN_CLASSES
    if text:  # token ids index as int64; the label is a (batch, 1) 0/1 float or a class
        x = x.long()
        target = torch.from_numpy(y_np.argmax(1) if classes else y_np)
    else:
        target = torch.from_numpy(y_np if segmentation else y_np.argmax(1))
    if data_format == "channels_last" and not text:
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    trained = [p for p in net.parameters() if p.requires_grad]  # not a frozen base's
    if model in ADAM or text:
        optimizer = torch.optim.Adam(trained, lr=1e-3, eps=1e-7)
    elif model == "mnist_cnn":
        optimizer = torch.optim.Adadelta(net.parameters(), lr=1.0, rho=0.95, eps=1e-7)
    else:
        optimizer = torch.optim.RMSprop(net.parameters(), lr=1e-4, alpha=0.9, eps=1e-7)
    # the models end in logits: the loss applies the softmax / sigmoid, fused, as kiln's does
    loss_fn = torch.nn.BCEWithLogitsLoss() if segmentation or (text and not classes) \
        else torch.nn.CrossEntropyLoss()
    net.train(mode == "train")  # before compiling: a mode change would recompile
    if compile:
        net = torch.compile(net)  # same parameters as the optimizer's; compiles on first call
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

    return train_step if mode == "train" else infer_step
