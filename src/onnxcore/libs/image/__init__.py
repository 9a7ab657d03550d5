"""Image decoding for ``ImageDecoder`` (PNM, BMP, PNG, TIFF, JPEG, JPEG 2000, WebP).

:mod:`~onnxcore.libs.image.decode` sniffs a stream's format and decodes it with the numpy decoders (one module per
format, imported only when a stream of its format arrives, since together they are large); each decodes into an
``(height, width, channels)`` uint8 array or raises :class:`~onnxcore.libs.image.common.CorruptImage`.
:mod:`~onnxcore.libs.image.pillow` decodes the same streams with Pillow's C decoders when the ``image`` extra is
installed. The operator itself is :mod:`onnxcore.kernels.image_decoder`.
"""
