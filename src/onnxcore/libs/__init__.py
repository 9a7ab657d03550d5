"""Libraries the kernels use that are not operators: image decoding (:mod:`onnxcore.libs.image`) and the RE2
engine (:mod:`onnxcore.libs.re2`).

They know nothing of ONNX: they import only the limits and the error hierarchy, and each is used by the kernels of
one operator family (ImageDecoder; RegexFullMatch and com.microsoft's Tokenizer).
"""
