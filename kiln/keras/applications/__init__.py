"""`keras.applications`: ImageNet models built from kiln's layers, with Keras 3's layer names
and weight order, so Keras's weight files load (docs/applications.md lists what exists).

    from kiln.keras.applications import ResNet50
    model = ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
"""

from . import (
    convnext,
    densenet,
    efficientnet,
    efficientnet_v2,
    imagenet_utils,
    inception_v3,
    mobilenet,
    mobilenet_v2,
    mobilenet_v3,
    resnet,
    resnet50,
    resnet_v2,
    vgg16,
    vgg19,
    xception,
)
from .convnext import ConvNeXtBase, ConvNeXtLarge, ConvNeXtSmall, ConvNeXtTiny, ConvNeXtXLarge
from .densenet import DenseNet121, DenseNet169, DenseNet201
from .efficientnet import (
    EfficientNetB0,
    EfficientNetB1,
    EfficientNetB2,
    EfficientNetB3,
    EfficientNetB4,
    EfficientNetB5,
    EfficientNetB6,
    EfficientNetB7,
)
from .efficientnet_v2 import (
    EfficientNetV2B0,
    EfficientNetV2B1,
    EfficientNetV2B2,
    EfficientNetV2B3,
    EfficientNetV2L,
    EfficientNetV2M,
    EfficientNetV2S,
)
from .inception_v3 import InceptionV3
from .mobilenet import MobileNet
from .mobilenet_v2 import MobileNetV2
from .mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from .resnet import ResNet50, ResNet101, ResNet152
from .resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from .vgg16 import VGG16
from .vgg19 import VGG19
from .xception import Xception

__all__ = ["efficientnet", "imagenet_utils", "mobilenet_v2", "resnet", "resnet50", "resnet_v2",
           "vgg16", "vgg19", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2",
           "EfficientNetB3", "EfficientNetB4", "EfficientNetB5", "EfficientNetB6",
           "EfficientNetB7", "MobileNetV2", "ResNet50", "ResNet101", "ResNet152", "ResNet50V2",
           "ResNet101V2", "ResNet152V2", "VGG16", "VGG19"]
# MobileNet (v1), MobileNetV3 and EfficientNetV2
__all__ += ["efficientnet_v2", "mobilenet", "mobilenet_v3", "EfficientNetV2B0", "EfficientNetV2B1",
            "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M",
            "EfficientNetV2L", "MobileNet", "MobileNetV3Small", "MobileNetV3Large"]
__all__ += ["convnext", "densenet", "inception_v3", "xception", "ConvNeXtBase", "ConvNeXtLarge",
            "ConvNeXtSmall", "ConvNeXtTiny", "ConvNeXtXLarge", "DenseNet121", "DenseNet169",
            "DenseNet201", "InceptionV3", "Xception"]
