"""`keras.preprocessing.image`: Keras 2's image augmentation and image-file helpers."""

from ..utils.image_utils import smart_resize
from .image_data_generator import ImageDataGenerator
from .image_files import array_to_img, img_to_array, load_img, save_img
from .image_iterators import DirectoryIterator, Iterator, NumpyArrayIterator

__all__ = ["DirectoryIterator", "ImageDataGenerator", "Iterator", "NumpyArrayIterator",
           "array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]
