"""PyTorch copies of the benchmark architectures of kiln.bench.architectures that are not
plain stacks: MobileNetV2 and the small U-Net. Keras' conventions where they change the work:
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
