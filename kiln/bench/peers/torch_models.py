"""PyTorch copies of the benchmark architectures of kiln.bench.architectures that are not
plain stacks: MobileNetV2, the small U-Net, the text models, and keras.applications' ResNet50
and EfficientNet-B0 (torchvision is not needed: its ResNet50 is v1.5, strided in the 3x3
conv, without conv biases, and not Keras'). Keras' conventions where they change the work:
BatchNormalization's epsilon 1e-3 (momentum 0.999 is PyTorch's 0.001), and 'same' padding of a
stride-2 convolution on an even size pads the bottom and right only."""


def mobilenet_v2(torch, classes=10):
    """architectures.mobilenet_v2: relu6, depthwise 3x3 (groups = channels), inverted
    residuals; the output is logits (the loss applies the softmax)."""
    from ..architectures import MOBILENET_V2_BLOCKS
    nn = torch.nn

    def bn(channels):
        return nn.BatchNorm2d(channels, eps=1e-3, momentum=0.001)

    class InvertedResidual(nn.Module):
        def __init__(self, in_channels, filters, stride, expansion, first):
            super().__init__()
            hidden = in_channels if first else in_channels * expansion
            layers = [] if first else [nn.Conv2d(in_channels, hidden, 1, bias=False),
                                       bn(hidden), nn.ReLU6()]
            if stride == 2:  # Keras' correct_pad on an even size, then a 'valid' conv
                layers.append(nn.ZeroPad2d((0, 1, 0, 1)))
            layers += [nn.Conv2d(hidden, hidden, 3, stride, padding=1 if stride == 1 else 0,
                                 groups=hidden, bias=False), bn(hidden), nn.ReLU6(),
                       nn.Conv2d(hidden, filters, 1, bias=False), bn(filters)]
            self.body = nn.Sequential(*layers)
            self.residual = in_channels == filters and stride == 1

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    layers = [nn.ZeroPad2d((0, 1, 0, 1)), nn.Conv2d(3, 32, 3, 2, bias=False), bn(32),
              nn.ReLU6()]
    channels = 32
    for index, (filters, stride, expansion) in enumerate(MOBILENET_V2_BLOCKS):
        layers.append(InvertedResidual(channels, filters, stride, expansion, index == 0))
        channels = filters
    layers += [nn.Conv2d(channels, 1280, 1, bias=False), bn(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, classes)]
    return nn.Sequential(*layers)


def unet(torch, base_filters=16):
    """architectures.unet; the output is per-pixel logits (the loss applies the sigmoid)."""
    nn = torch.nn

    def double_conv(in_channels, filters):
        return nn.Sequential(nn.Conv2d(in_channels, filters, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(filters, filters, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            f = base_filters
            self.down_1, self.down_2 = double_conv(1, f), double_conv(f, 2 * f)
            self.bottleneck = double_conv(2 * f, 4 * f)
            self.up_2, self.up_1 = double_conv(4 * f + 2 * f, 2 * f), double_conv(2 * f + f, f)
            self.pool = nn.MaxPool2d(2)
            self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
            self.head = nn.Conv2d(f, 1, 1)

        def forward(self, x):
            skip_1 = self.down_1(x)
            skip_2 = self.down_2(self.pool(skip_1))
            x = self.bottleneck(self.pool(skip_2))
            x = self.up_2(torch.cat([self.upsample(x), skip_2], 1))
            x = self.up_1(torch.cat([self.upsample(x), skip_1], 1))
            return self.head(x)

    return UNet()


def imdb_rnn(torch, recurrent="LSTM", units=128):
    """architectures.imdb_rnn: Embedding, one nn.LSTM / nn.GRU layer (batch first; PyTorch's
    GRU is Keras 3's reset_after=True), Linear on the last output; logits out."""
    from ..architectures import IMDB_RNN_SHAPE
    nn = torch.nn
    vocabulary, _, width = IMDB_RNN_SHAPE

    class TextRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocabulary, width)
            self.rnn = getattr(nn, recurrent)(width, units, batch_first=True)
            self.head = nn.Linear(units, 1)

        def forward(self, tokens):
            sequence, _ = self.rnn(self.embedding(tokens))
            return self.head(sequence[:, -1])

    return TextRNN()


def imdb_cnn(torch):
    """architectures.imdb_cnn: Embedding, Dropout, Conv1d(250, 3) + relu over (N, C, T), max
    over time, Linear(250), Dropout, relu, Linear(1); logits out."""
    from ..architectures import IMDB_CNN_SHAPE
    nn = torch.nn
    vocabulary, _, width = IMDB_CNN_SHAPE

    class TextCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocabulary, width)
            self.dropout = nn.Dropout(0.2)
            self.conv = nn.Conv1d(width, 250, 3)
            self.head = nn.Sequential(nn.Linear(250, 250), nn.Dropout(0.2), nn.ReLU(),
                                      nn.Linear(250, 1))

        def forward(self, tokens):
            x = self.dropout(self.embedding(tokens)).transpose(1, 2)
            x = torch.relu(self.conv(x)).amax(dim=2)
            return self.head(x)

    return TextCNN()


def transformer_encoder(torch, blocks=4, heads=4, feed_forward=1024, classes=2):
    """architectures.transformer_encoder: Embedding, nn.TransformerEncoderLayer blocks
    (batch first, post-norm: norm_first=False, relu, dropout 0, LayerNorm eps 1e-6; its
    attention is scaled_dot_product_attention), the mean over the tokens, Linear; logits out."""
    from ..architectures import TRANSFORMER_SHAPE
    nn = torch.nn
    vocabulary, _, width = TRANSFORMER_SHAPE

    class TextTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocabulary, width)
            self.blocks = nn.Sequential(*[
                nn.TransformerEncoderLayer(width, heads, feed_forward, dropout=0.0,
                                           activation="relu", layer_norm_eps=1e-6,
                                           batch_first=True, norm_first=False)
                for _ in range(blocks)])
            self.head = nn.Linear(width, classes)

        def forward(self, tokens):
            return self.head(self.blocks(self.embedding(tokens)).mean(dim=1))

    return TextTransformer()


def _keras_bn(torch, channels, epsilon=1e-3):
    """Keras' BatchNormalization: momentum 0.99 is PyTorch's 0.01."""
    return torch.nn.BatchNorm2d(channels, eps=epsilon, momentum=0.01)


def resnet50_features(torch):
    """keras.applications.ResNet50 without its top, layer by layer: conv1 (7x7 stride 2 with
    a bias after 3 rows and columns of zeros), BN (epsilon 1.001e-5), relu, 1 of zeros and a
    3x3 stride-2 max pooling; then Keras' v1 bottleneck blocks (the stride on the first 1x1
    conv, biases on every conv, a 1x1 conv + BN shortcut in each stack's first block) in
    stacks of 3, 4, 6 and 3 blocks of 64, 128, 256 and 512 filters."""
    nn = torch.nn

    def bn(channels):
        return _keras_bn(torch, channels, 1.001e-5)

    class Bottleneck(nn.Module):
        def __init__(self, in_channels, filters, stride, conv_shortcut):
            super().__init__()
            out = 4 * filters
            self.shortcut = (nn.Sequential(nn.Conv2d(in_channels, out, 1, stride), bn(out))
                             if conv_shortcut else nn.Identity())
            self.body = nn.Sequential(
                nn.Conv2d(in_channels, filters, 1, stride), bn(filters), nn.ReLU(),
                nn.Conv2d(filters, filters, 3, padding=1), bn(filters), nn.ReLU(),
                nn.Conv2d(filters, out, 1), bn(out))

        def forward(self, x):
            return torch.relu(self.shortcut(x) + self.body(x))

    layers = [nn.ZeroPad2d(3), nn.Conv2d(3, 64, 7, 2), bn(64), nn.ReLU(), nn.ZeroPad2d(1),
              nn.MaxPool2d(3, 2)]
    channels = 64
    for filters, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for index in range(blocks):
            layers.append(Bottleneck(channels, filters, stride if index == 0 else 1,
                                     index == 0))
            channels = 4 * filters
    return nn.Sequential(*layers)


def resnet50(torch, classes=1000):
    """keras.applications.ResNet50(weights=None): the features, global average pooling and a
    Linear of `classes`; logits out (the loss applies the softmax)."""
    nn = torch.nn
    return nn.Sequential(resnet50_features(torch), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(2048, classes))


def resnet50_finetune(torch, classes=10):
    """architectures.resnet50_finetune: ResNet50's features frozen (requires_grad False, and
    kept in eval mode, so its BN uses its moving statistics, as Keras' base(x,
    training=False)), global average pooling and a new Linear head; logits out."""
    nn = torch.nn

    class Finetune(nn.Module):
        def __init__(self):
            super().__init__()
            self.base = resnet50_features(torch)
            self.base.requires_grad_(False)
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                      nn.Linear(2048, classes))

        def train(self, mode=True):
            super().train(mode)
            self.base.eval()  # the frozen base stays in inference mode
            return self

        def forward(self, x):
            return self.head(self.base(x))

    return Finetune()


def efficientnet_b0(torch, classes=1000):
    """keras.applications.EfficientNetB0(weights=None), layer by layer: Rescaling(1/255) and
    the Normalization (mean 0, variance 1 without ImageNet weights) on the input; the stem
    (Keras' correct_pad zeros, 3x3 stride-2 conv, BN, swish); 16 MBConv blocks (1x1
    expansion, depthwise kxk with correct_pad before a strided one, squeeze-and-excitation
    of two biased 1x1 convs, 1x1 projection, per-sample stochastic depth of rate
    0.2 * block / 16 before the residual add); the 1280-filter top conv, pooling, Dropout(0.2)
    and a Linear; BN epsilon 1e-3 everywhere; logits out."""
    from ..architectures import EFFICIENTNET_B0_STAGES
    nn = torch.nn
    functional = torch.nn.functional

    def correct_pad(x, kernel_size):
        # Keras' imagenet_utils.correct_pad, from the input's size (left, right, top, bottom)
        half = kernel_size // 2
        height, width = x.shape[2:]
        return (half - (1 - width % 2), half, half - (1 - height % 2), half)

    class MBConv(nn.Module):
        def __init__(self, filters_in, filters_out, kernel_size, strides, expand_ratio,
                     se_ratio, drop_rate):
            super().__init__()
            filters = filters_in * expand_ratio
            self.expand = (nn.Sequential(nn.Conv2d(filters_in, filters, 1, bias=False),
                                         _keras_bn(torch, filters), nn.SiLU())
                           if expand_ratio != 1 else nn.Identity())
            self.kernel_size, self.strides = kernel_size, strides
            self.depthwise = nn.Sequential(
                nn.Conv2d(filters, filters, kernel_size, strides,
                          padding=kernel_size // 2 if strides == 1 else 0, groups=filters,
                          bias=False), _keras_bn(torch, filters), nn.SiLU())
            squeezed = max(1, int(filters_in * se_ratio))
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(filters, squeezed, 1),
                                    nn.SiLU(), nn.Conv2d(squeezed, filters, 1), nn.Sigmoid())
            self.project = nn.Sequential(nn.Conv2d(filters, filters_out, 1, bias=False),
                                         _keras_bn(torch, filters_out))
            self.residual = strides == 1 and filters_in == filters_out
            self.drop_rate = drop_rate

        def forward(self, inputs):
            x = self.expand(inputs)
            if self.strides == 2:
                x = functional.pad(x, correct_pad(x, self.kernel_size))
            x = self.depthwise(x)
            x = self.project(x * self.se(x))
            if not self.residual:
                return x
            if self.training and self.drop_rate > 0:  # Dropout, noise_shape (None, 1, 1, 1)
                keep = 1.0 - self.drop_rate
                mask = torch.bernoulli(torch.full((x.shape[0], 1, 1, 1), keep,
                                                  dtype=x.dtype, device=x.device))
                x = x * mask / keep
            return x + inputs

    class EfficientNetB0(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, bias=False),
                                      _keras_bn(torch, 32), nn.SiLU())
            stages = [(stage, j) for stage in EFFICIENTNET_B0_STAGES for j in range(stage[1])]
            blocks = []
            for index, ((kernel, _, filters_in, filters_out, stride, expansion), j) in \
                    enumerate(stages):
                blocks.append(MBConv(filters_out if j else filters_in, filters_out, kernel,
                                     1 if j else stride, expansion, 0.25,
                                     0.2 * index / len(stages)))
            self.blocks = nn.Sequential(*blocks)
            self.top = nn.Sequential(nn.Conv2d(320, 1280, 1, bias=False),
                                     _keras_bn(torch, 1280), nn.SiLU(),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
                                     nn.Linear(1280, classes))

        def forward(self, x):
            x = x * (1.0 / 255.0)  # Rescaling; the Normalization (mean 0, variance 1) is x
            x = self.stem(functional.pad(x, correct_pad(x, 3)))
            return self.top(self.blocks(x))

    return EfficientNetB0()
