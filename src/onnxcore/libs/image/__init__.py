"""Image codecs for ``ImageDecoder`` (JPEG, PNG, TIFF, WebP, JPEG 2000), in pure numpy.

Each codec decodes a stream into an ``(height, width, channels)`` uint8 array or raises
:class:`~onnxcore.libs.image.common.CorruptImage`; the kernel imports a codec only when a
stream of its format arrives, since together they are the largest part of the kernels.
"""
