"""Benchmark architectures written once for any Keras-compatible module `K` (kiln.keras or
real Keras 3): the harness builds kiln's and the Keras peers' copies from the same code, and
the tests compare them. Nothing here imports a framework."""


def resnet20(K, data_format="channels_last", activation="relu"):
    """resnet_v1(input_shape, depth=20) of the Keras 2 example cifar10_resnet.py, 10 classes.

    The example's kernel_regularizer=l2(1e-4) is left out in every framework's copy alike:
    PyTorch's copy has no per-layer penalty, and the step compared stays the same everywhere
    (kiln adds the penalty in one pass over each kernel, examples/cifar10_resnet.py has it).
    `activation` replaces relu everywhere (tests use tanh)."""
    layers = K.layers
    shape = (32, 32, 3) if data_format == "channels_last" else (3, 32, 32)
    f = dict(data_format=data_format)
    channel_axis = -1 if data_format == "channels_last" else 1
    relu = activation

    def resnet_layer(x, filters=16, kernel_size=3, strides=1, activation=relu,
                     batch_normalization=True):
        x = layers.Conv2D(filters, kernel_size=kernel_size, strides=strides, padding="same",
                          kernel_initializer="he_normal", **f)(x)
        if batch_normalization:
            x = layers.BatchNormalization(axis=channel_axis)(x)
        if activation is not None:
            x = layers.Activation(activation)(x)
        return x

    inputs = K.Input(shape=shape)
    x = resnet_layer(inputs)
    filters = 16
    for stack in range(3):
        for block in range(3):
            strides = 2 if stack > 0 and block == 0 else 1
            y = resnet_layer(x, filters, strides=strides)
            y = resnet_layer(y, filters, activation=None)
            if strides == 2:  # projection shortcut: 1x1 conv, no BN, no activation
                x = resnet_layer(x, filters, kernel_size=1, strides=strides, activation=None,
                                 batch_normalization=False)
            x = layers.add([x, y])
            x = layers.Activation(relu)(x)
        filters *= 2
    x = layers.AveragePooling2D(pool_size=8, **f)(x)
    y = layers.Flatten(**f)(x)
    outputs = layers.Dense(10, activation="softmax", kernel_initializer="he_normal")(y)
    return K.Model(inputs=inputs, outputs=outputs)


# (filters, stride, expansion) of MobileNetV2's 17 inverted residual blocks, block_id 0-16
MOBILENET_V2_BLOCKS = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6),
                       (64, 2, 6), (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6),
                       (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6), (320, 1, 6))


def mobilenet_v2(K, data_format="channels_last", input_size=96, classes=10):
    """Keras' MobileNetV2(alpha=1.0, weights=None, classes=classes) topology (layer names
    included, as keras/src/applications/mobilenet_v2.py builds it), on input_size x
    input_size x 3 images: depthwise convolutions, relu6, inverted residuals and BN."""
    layers = K.layers
    f = dict(data_format=data_format)
    channel_axis = -1 if data_format == "channels_last" else 1
    shape = ((input_size, input_size, 3) if data_format == "channels_last"
             else (3, input_size, input_size))

    def batch_norm(x, name):
        return layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                         name=name)(x)

    def correct_pad(x):
        # Keras' imagenet_utils.correct_pad for a 3x3 stride-2 'valid' depthwise conv
        height, width = (x.shape[1:3] if data_format == "channels_last" else x.shape[2:4])
        adjust = (1 - height % 2, 1 - width % 2)
        return ((1 - adjust[0], 1), (1 - adjust[1], 1))

    def inverted_res_block(inputs, filters, stride, expansion, block_id):
        in_channels = inputs.shape[channel_axis]
        x = inputs
        prefix = f"block_{block_id}_"
        if block_id:
            x = layers.Conv2D(expansion * in_channels, 1, padding="same", use_bias=False,
                              name=prefix + "expand", **f)(x)
            x = batch_norm(x, prefix + "expand_BN")
            x = layers.ReLU(6.0, name=prefix + "expand_relu")(x)
        else:
            prefix = "expanded_conv_"
        if stride == 2:
            x = layers.ZeroPadding2D(padding=correct_pad(x), name=prefix + "pad", **f)(x)
        x = layers.DepthwiseConv2D(3, strides=stride, use_bias=False,
                                   padding="same" if stride == 1 else "valid",
                                   name=prefix + "depthwise", **f)(x)
        x = batch_norm(x, prefix + "depthwise_BN")
        x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(x)
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False, name=prefix + "project",
                          **f)(x)
        x = batch_norm(x, prefix + "project_BN")
        if in_channels == filters and stride == 1:
            return layers.Add(name=prefix + "add")([inputs, x])
        return x

    inputs = K.Input(shape=shape)
    x = layers.Conv2D(32, 3, strides=2, padding="same", use_bias=False, name="Conv1",
                      **f)(inputs)
    x = batch_norm(x, "bn_Conv1")
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(MOBILENET_V2_BLOCKS):
        x = inverted_res_block(x, filters, stride, expansion, block_id)
    x = layers.Conv2D(1280, 1, use_bias=False, name="Conv_1", **f)(x)
    x = batch_norm(x, "Conv_1_bn")
    x = layers.ReLU(6.0, name="out_relu")(x)
    x = layers.GlobalAveragePooling2D(**f)(x)
    outputs = layers.Dense(classes, activation="softmax", name="predictions")(x)
    return K.Model(inputs, outputs, name="mobilenetv2_1.00_%d" % input_size)


def unet(K, data_format="channels_last", input_size=64, base_filters=16):
    """A small U-Net for per-pixel binary segmentation of input_size x input_size x 1 images:
    two down steps (two 3x3 relu convs, 2x2 max pooling), a bottleneck, two up steps
    (UpSampling2D, concatenation with the skip connection, two 3x3 relu convs) and a 1x1
    sigmoid conv."""
    layers = K.layers
    f = dict(data_format=data_format)
    channel_axis = -1 if data_format == "channels_last" else 1
    shape = ((input_size, input_size, 1) if data_format == "channels_last"
             else (1, input_size, input_size))

    def double_conv(x, filters):
        for _ in range(2):
            x = layers.Conv2D(filters, 3, padding="same", activation="relu", **f)(x)
        return x

    inputs = K.Input(shape=shape)
    skip_1 = double_conv(inputs, base_filters)
    skip_2 = double_conv(layers.MaxPooling2D(2, **f)(skip_1), 2 * base_filters)
    x = double_conv(layers.MaxPooling2D(2, **f)(skip_2), 4 * base_filters)
    for skip, filters in ((skip_2, 2 * base_filters), (skip_1, base_filters)):
        x = layers.UpSampling2D(2, **f)(x)
        x = double_conv(layers.concatenate([x, skip], axis=channel_axis), filters)
    outputs = layers.Conv2D(1, 1, activation="sigmoid", **f)(x)
    return K.Model(inputs, outputs, name="unet")


# The sequence models: token ids in, a sigmoid out (IMDB sentiment), no data format.
# (vocabulary, sequence length, embedding width) as the Keras 2 examples set them.
IMDB_RNN_SHAPE = (20000, 80, 128)
IMDB_CNN_SHAPE = (5000, 400, 50)


def imdb_rnn(K, recurrent="LSTM", units=128):
    """keras/examples/imdb_lstm.py's model without its dropouts (so every framework runs its
    plain recurrent kernel): Embedding(20000, 128), LSTM(128) (or GRU(128), Keras 3's
    reset_after=True, PyTorch's GRU), Dense(1, sigmoid); sequences of 80 tokens."""
    vocabulary, length, width = IMDB_RNN_SHAPE
    layers = K.layers
    inputs = K.Input((length,), dtype="int32")
    x = layers.Embedding(vocabulary, width)(inputs)
    x = getattr(layers, recurrent)(units)(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    return K.Model(inputs, outputs, name=f"imdb_{recurrent.lower()}")


def imdb_cnn(K):
    """keras/examples/imdb_cnn.py: Embedding(5000, 50), Dropout(0.2), Conv1D(250, 3, relu),
    GlobalMaxPooling1D, Dense(250), Dropout(0.2), relu, Dense(1), sigmoid; 400 tokens."""
    vocabulary, length, width = IMDB_CNN_SHAPE
    layers = K.layers
    inputs = K.Input((length,), dtype="int32")
    x = layers.Dropout(0.2)(layers.Embedding(vocabulary, width)(inputs))
    x = layers.Conv1D(250, 3, padding="valid", activation="relu", strides=1)(x)
    x = layers.GlobalMaxPooling1D()(x)
    x = layers.Activation("relu")(layers.Dropout(0.2)(layers.Dense(250)(x)))
    outputs = layers.Activation("sigmoid")(layers.Dense(1)(x))
    return K.Model(inputs, outputs, name="imdb_cnn")


# (vocabulary, sequence length, model width) of the Transformer encoder
TRANSFORMER_SHAPE = (20000, 128, 256)


def transformer_encoder(K, blocks=4, heads=4, feed_forward=1024, classes=2):
    """A text classifier of post-norm Transformer encoder blocks, as keras.io's "Text
    classification with Transformer" writes its TransformerBlock (without its dropouts, as
    the other bench models): x = LayerNorm(x + MultiHeadAttention(x, x)), then
    x = LayerNorm(x + Dense(width)(Dense(feed_forward, relu)(x))), epsilon 1e-6; 4 blocks of
    width 256 and 4 heads over 128 tokens of a 20000-word Embedding, GlobalAveragePooling1D,
    Dense(classes, softmax). No position embedding: positions would need ops.arange inside
    the model, which kiln does not trace yet (the attention and its cost are the same)."""
    vocabulary, length, width = TRANSFORMER_SHAPE
    layers = K.layers
    inputs = K.Input((length,), dtype="int32")
    x = layers.Embedding(vocabulary, width)(inputs)
    for _ in range(blocks):
        attention = layers.MultiHeadAttention(num_heads=heads, key_dim=width // heads)(x, x)
        x = layers.LayerNormalization(epsilon=1e-6)(layers.add([x, attention]))
        y = layers.Dense(width)(layers.Dense(feed_forward, activation="relu")(x))
        x = layers.LayerNormalization(epsilon=1e-6)(layers.add([x, y]))
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return K.Model(inputs, outputs, name="transformer_encoder")


# keras.applications models on ImageNet-sized images: (height, width, channels), 1000 classes
APPLICATION_IMAGE = (224, 224, 3)
APPLICATION_CLASSES = 1000
FINETUNE_CLASSES = 10  # the new head of the fine-tuning step: a small new task
# EfficientNet-B0's 7 stages as keras.applications builds them, for the PyTorch copy:
# (kernel size, repeats, filters in, filters out, stride of the first block, expansion)
EFFICIENTNET_B0_STAGES = ((3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 2, 6), (5, 2, 24, 40, 2, 6),
                          (3, 3, 40, 80, 2, 6), (5, 3, 80, 112, 1, 6), (5, 4, 112, 192, 2, 6),
                          (3, 1, 192, 320, 1, 6))


def _application(K, builder, data_format, **arguments):
    """K.applications.<builder>(weights=None, ...) on 224x224x3 images in `data_format`
    (an application follows the global image data format, set for its building only)."""
    height, width, channels = APPLICATION_IMAGE
    shape = ((height, width, channels) if data_format == "channels_last"
             else (channels, height, width))
    previous = K.backend.image_data_format()
    K.backend.set_image_data_format(data_format)
    try:
        return getattr(K.applications, builder)(weights=None, input_shape=shape, **arguments)
    finally:
        K.backend.set_image_data_format(previous)


def resnet50(K, data_format="channels_last"):
    """keras.applications.ResNet50(weights=None): 224x224x3, 1000 classes, softmax."""
    return _application(K, "ResNet50", data_format, classes=APPLICATION_CLASSES)


def efficientnet_b0(K, data_format="channels_last"):
    """keras.applications.EfficientNetB0(weights=None): 224x224x3, 1000 classes (its
    Rescaling and Normalization inside, swish, squeeze-and-excitation, stochastic depth)."""
    return _application(K, "EfficientNetB0", data_format, classes=APPLICATION_CLASSES)


def resnet50_finetune(K, data_format="channels_last", classes=FINETUNE_CLASSES):
    """keras.io's "Transfer learning & fine-tuning": a frozen ResNet50 base
    (include_top=False, base.trainable = False, called with training=False so its
    BatchNormalization stays in inference mode), GlobalAveragePooling2D and a new Dense
    softmax head; only the head trains."""
    base = _application(K, "ResNet50", data_format, include_top=False)
    base.trainable = False
    inputs = K.Input(tuple(base.input.shape)[1:])
    x = base(inputs, training=False)
    x = K.layers.GlobalAveragePooling2D(data_format=data_format)(x)
    outputs = K.layers.Dense(classes, activation="softmax")(x)
    return K.Model(inputs, outputs, name="resnet50_finetune")
