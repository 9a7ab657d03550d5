"""JPEG 2000 decoding (ImageDecoder's ``onnxcore.libs.image.jp2``) against Pillow / OpenJPEG 2.5.

Pillow writes the streams for most cases (sizes, modes, contents, progressions, tiles, layers, 9-7);
streams with options Pillow's writer cannot set (code-block styles, SOP/EPH, ROI, POC, tile-parts,
sub-sampling, 12 bits) were made once with opj_compress (OpenJPEG 2.5.0) and are embedded below. Pillow's
decode of each stream is the expected output: reversible and irreversible alike must match exactly.
"""

from __future__ import annotations

import base64
import io
import time

import numpy as np
import pytest
from corpus import node_cases_dir

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.libs.image.common import CorruptImage
from onnxcore.libs.image.jp2 import decode_jpeg2000
from onnxcore.limits import Limits

Image = pytest.importorskip("PIL.Image")

_FIXTURES = {
    "bypass": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAgQEAQH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAPLAAH/k8+0WaNGgBFjHLoffd1RpihFlfRW"
        "/3/v6AL/f6ywRf9/z7Rho0aAHNwLQqLtHpa4DhyLUCUV/3+qUDD/f7mOtf9/z7Rho0aAHrXA4sfPa1NuOQm/34NI/3/jn0L/f+wC"
        "df9/w+oYaJR9oYkRNQ+0MSJEgBY1nEF4OUFu7nMBv8qaqv9/aBv/fx0C5K3PwBGq/39xSQ/S3Kr/fxkhF0lsFw81/3/Oiv9/QwL/"
        "f8/AUSNEjU/AQRNGiU/MMSJEiRIh3c6Fk1T+HMJfA43/f8/BNf9/CfD/f7Q81f9/GV55GwjLCn8MVRkrdSr/f9gLKv9/aWb/fx6e"
        "Ryj8zyrZ/38Sdf9/wLL/f10V/391Rf9/x9oo0SNR9okkSJR+AgkSJEgXZbpVZC87Yka/4b+V/38Ggv9/XdDV/38fM9MOK972WD8x"
        "Jf9/SlD/f1O4/38SyLGfwN1VnxAq/39SCf9/CFX/fy0F/3/H2nXTp1H2nHTplH4FWTJkyCiw7+qRieIe44OzkthaXS3ctcysOcdy"
        "R6ebZK5/AgmB9ECcCv9/CwJvpoGgiv9/AZTmYOT5lf9/IqSqPVFqBuWic/JNkHOVAnDwXzElb8kK4vmnjxweHe1hd9X/fwzDxGf7"
        "rZX/fwJEgDyI9/9/a0tuv+ujoCyZ8Wj3GPZq2/4q6sO/CKNAYPjA/38A8Ob1Eur/fwBTfFKhFf9/CjzhBXeV/3/PwOOnTp1PwMum"
        "TplPzLMmTJkyKPQkMbcTxt272wWpJVl3zI6Z4AXMJ31F0BT/fwVApY0czhr/fwga5KatvhX/fwg7LX9y6hX/fwx6IhjUtFX/fyGS"
        "PHn/aT1JdUnqm0+kydmNrro7x0YiJK8ev7dH4WgK/38AfYFz28f/fwYgJlkWXqr/fwEc5E5ZW/9/JgX/NWlYhOM+jvwEE6jPwvjB"
        "GAVT3gAEbjGw1f9/BBTtLQDC/38AUu7dYpX/fwxkdOx2tf9/CB88KZkq/3/fmVdOnTp1fmYZOnTplPzMMmTJkyBprRcdSDPMAsW1"
        "5bliZ/emFB3/Qj8PYA1O8h11/38LkCMr1HP1/38AKgrhhnmq/38Mfyg4u3kl/38ANjp2xxAq/384/y5HmUDAvBpoyEm6O7obaZUT"
        "t/5HH9swMLGgAdX/fwC61YvEOCr/fw1Eu+smWFX/fw4tQRQgP1X/fwA3HSsiOv9/I9ASEDLKkpZ7OJJsD3lUBwnZ0UpoqLsfDRBn"
        "RMBq/38OKgBSOIX/fwAYIFz2lf9/ALQY/gTV/38DO+1UkpX/f//Z"
    ),
    "reset_grey": (
        "/0//UQApAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAABBwEB/1IADAAAAAEAAgQEAgH/XAAKQEBISFBISFD/ZAAl"
        "AAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAD4AAH/k8+0UBFfjAKBr3rIN5cT1Vhz3PD6ooirx9oj"
        "PwDo/ANAGLwSbqHSP5+WOvRNtWUUIssi8PEZ83bXHWboRxaSvx99pX/fFkffTq5bKvvPwNZ+BlH4FwAt64kWF9nMM8x9auFeq1Hn"
        "5ddxr2OBJzz98N5IfVqZjXbFnnFJHmOt6dAV4GiNXwsJAb4KPyLrbwxNRV/SnpY3ivMze2qWAc1imgJEq4npB0R/Y1bm5VaI3pfk"
        "ospSAdfHUtp/TP9/Jn2p9i3Vv4QAVbQIaedzWn8uHBiwY3sG9LsEexK6t+qMJRa7wXc6POPczUE4X//Z"
    ),
    "termall": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAgQEBAH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAATbAAH/k8+0ii0UkUkkmhFnBP9/Amn/f9V/"
        "CCl/Zsf/f8fMLf9//3+VE/9//38Gq8//f8+02UiUkUikmhzcCqsQXz//fw/fBp96n2An/38rwGb/f5W69/9//3+9ZwX/f8+00UiU"
        "kUi0mh61vxg/L/9/ZKvv55bnwUf/f/isKv9/f/kvn/9//38GkXv/f8PqNFIpJFJJR9pEokootFJJQ+0kUSiiWikSgBY1m3Qrz/9/"
        "Ut8O/38Bf6gP/38/tS3/f/9/VcX/fx0PLn//fyE/P40/cP9/nz3/f/9/f62//38DX0Y//38ZH6J/f/9/J0f/f4f/fz+/FYKn/3/f"
        "AV//fz/E/3/PwIlpIlFJJFIpT8DRSKJRRSRSTU/MiSikUUikSkkkgCHbTx8iAn/qf+l//3+Xlf9/74df/38E272f/3+/W6P/f98h"
        "b/9/GV5v2B9//3+EP3//fz9v/39/Ag8MiAtKv/9/A0q//3//fwHSf/9/Hn9ffx25v3//f69/g/9/awLP/39/hY//fz+B/3//fydv"
        "/3//f8pf/3/H2oiSUUikkilH2kiUUSikUilH4GSiUSiUSkUigBdlun/cvy+/p8X/f3/Eb/9/L5kP/3//fxPX/38A3jP/fx8zF18f"
        "nxB/2f9/c1P/fy+p3/9/D9Of/39/NHX/fxLIsR/l/3/TBP9/R4P/f0fr/38B7v9//39X/3//fz//f8fa9SrTiVRyOUfa+KjTiNSq"
        "XUfgRNqLhcRqNSqAKLDv6pGJ3xaW4OznWH+jc90BDm5HyvNN/3/FBr+zjSVz/3/TP7sq15Jf/39xc4vWlXJ//3+LfNCyU5i//38i"
        "pKo9UWofEycTn5I/YEOPftcGT4uzIP9/YEaftBWad/9/rB3iDK2v/3/Sf1kkuOMJ/3//fwKwRPd//3//f2t/fX9iuSJW4kh17/Jf"
        "I7+25ZOrzfNhf5/6ggfAYsdf/3/lQqVS0T//f68Gy+3Bf/9/yH+4YvHGf/9/z8FxVRcTqNRqOU/BIZGnFIjkallPzRl1KMqJRKpV"
        "KoAo9CQxvyyGbdu9r09bDy0BfMjo7TmPf41/y2KmEP9//MJ/OGhJfS//f6+EMFUyJ/9/n70NRT+J/3+/khG7rxw//38hkjx5swVU"
        "j39MGVRvRh7dQwUz3/9/Jkkb0PKkn/9/s7wwP+JooTv/f68uT4RW93//f6/eLxAv7P9//39N3uZQIx//fyYF/389pqy/pxg/CFQC"
        "CZPRH/9/su+cHSxhr7+bf7Vszq//f9FFD1tra/9//38zcmAKv/9/yp+xLobev/9//3+Ula1wV/9/35kyonGlEojksllfmbOqUiUS"
        "iVRqWU/NcTGo0ajEalUqgGmfyEibf4MtN7Ao8TF/KdvLyzChgXSEZ/9/vSSmraLL/397Qyimhij/f9cTRYrvEn//f44/dTAiytF/"
        "/3//f8diuOG2v/9/OP8vwjjPfzrdwaaMfyzBd3Q/Lp//fzV8Eb9rDOI//39Zv2tXWlv/f8x+AHPmxf9/1w88am0lbv9/vJsu2Iw0"
        "/3//f60HKtcOz/9/I9ASED93q/P+Xr9/p6UJdq4QPH//f8O0yL+fO3X/f606nnKif/9/67jl2T7/f591d0gXx/9//39Z11tZsP9/"
        "/3+xTheYV/9//9k="
    ),
    "vcausal_grey": (
        "/0//UQApAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAABBwEB/1IADAAAAAEAAgQECAH/XAAKQEBISFBISFD/ZAAl"
        "AAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAD4AAH/k8+0VBFfhoxzhlDRDrW8iVpveOEg2Q88x8fa"
        "Iz8A2PwDQBi8EqZmVEpTIFD0Lw4Pgz5PIv23g1uhuKnrPWQw0x9VaqKfZv7opVa9fN/PwM5+BlH4GAAt64kWF9z/BQFhglGhQWhC"
        "xsGl87lxfNzDh8S2ZIoq+mRcuGuZ70X/ZSagiIKA+Z8uJAsi628Jc7SKtRvtVhskUUtfWVVYjDLsjZWXkU3ibnsCUqo2iF0rkb08"
        "0xrjUkhw7v3VOyZ9qfYt1Yq9JGpYQ6VQvv4SpfjiGhn/R68U3z9mAgENtHgrI7dMV2Pv8TtwRK//f//Z"
    ),
    "pterm": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAgQEEAH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAALMAAH/k8+0TBFjHLoffd1RpihE1gNbUzAp"
        "uEbPtFQc3AtCou0elrgOHIwoPsVSlNNLww7PtFQetcDix89rU245CbgSaya7ztrofnLD6hCPtDofaGAWNZxBeDlBbu5zAbMghSYp"
        "HQLkrc/A5PdyzpvLSE4ZIRdJbBCyHpsqswTPwE5+AlPzDiHdzoWTVP4cwmQgCY9SDW1KJrIZXnkbCMsKbRjx9EHBIuvL9IYenkco"
        "/M7oEp+2QI1cdsfaIR9ofH4B4BdlulVkLztiRsGrnc35FuwfM9MOK972WCFRijzJLWISyLGfwN1Vn4o/fVn1FKTH2l8faXR+BWAo"
        "sO/qkYniHuODs5LYWl0t3LXMrDnHckenm2SufzPFMd5JrgMh60q5XN5uQRnMWyKkqj1RagblonPyTZBzlQJw8F8xJW/JCuL5p5WF"
        "yDIMrbGWbOpxxnQQNURolsNrS26/66OgLJnxaPcY9mrb/irqw8NcNXyEHY4+NKpaKY4NfIn7NS+eozOkz8DOfgZT8zEo9CQxtxPG"
        "3bvbBaklWXfMjpngBcwnfUXQFP9zGWi/w04A7zeC1EUFVp1VP4oL36zrxxAhkjx5/2k9SXVJ6ptPpMnZja66O8dGIiSuz5GcSzkC"
        "eZF9vCK3vP93okC/tD9GnMoEYiYF/zVpWITjPo78BBOoz8L4wRgFU98Dd7Kx8C3O1C61toSrUwBVwMiiq29hB4mtcFjfmZ35m8/M"
        "yGmtFx1IM8wCxbXluWJn96YUHf9CP7f1hW+AV95GnViGKa7hzFd4lKFWyynIY7UUHHDbVjj/LkeZQMC8GmjISbo7uhtplRO3/kcf"
        "3cgsQ59JCWjYrfnG6CrzejZ5vU3n+OviGn9RgVa4dlkj0BIQMsqSlns4kmwPeVQHCdnRSmiouzmdbU5UT9pEZ5PxPbakC+TvedbW"
        "bGs8gLzCqv/Z"
    ),
    "segmark_grey": (
        "/0//UQApAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAABBwEB/1IADAAAAAEAAgQEIAH/XAAKQEBISFBISFD/ZAAl"
        "AAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAETAAH/k8+0ZBFfjXelHDJ8nC7C7mRK9bLXu3h1ZByU"
        "cb/H2ik/ARj8BIAYvBK89mVfq0QOpX8mf4RwAIVDSyLAzhAMycbiqnkXJ6/mtYdJHzciDIukF0NuTlex7e6RT/qfz8Difgax+BmA"
        "LeuJFhfdgzoxSCgp/K2q9h1kNlUxC4SJSexhw+CBtoW+q+mPUQhNgiVHCvEQvgaJxp8g304kC78i628I5qdIoIRGMdiA3GHqpdWn"
        "ePudxzIGPFJestFyb8Js35YyeXO8KvOmNcakVXPdP7qngiZ9qfYt1QZx0kaligwtKAWUq1L8AVx7yfx64XWYPDuo9lwN24KyoshB"
        "qbH3+XvViUsAl//Z"
    ),
    "all_styles": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAgQEPwH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAASGAAH/k8+00UkkiUSyGRFqA/0j0gO6P4nq"
        "MwBr14Le5baU+iu21b+gCrassEW2z7UZKRSJRLIZHNwLIp+dgDfs5BgAVp2GWJjCtlASiraplAwqtrmOtbbPtREopIpEshketb4d"
        "lpIgkAdq8HCAfsFFZrbfqgaQttWOfQq27AJ1tsPqRkpEolEIx9pkkkokklEow+0kSiUSUSiUQBY1nDyFc0XMttJDGxy2LJp1ttUq"
        "arZoG7YdBMNvNOsOVpx+QSBEEjVEcikqfdG3KrYZF4rZAETYWnCIa4FvNQp5qrbF6Kq2ShgVts/AyUkSiUUiUSjPwREkkkkoolEo"
        "z8yJSJRJJKJRKJRAIdxdVRUY65WVrK62i8ZYtgHjVbbP1QTVthUnwba1Q822GV5w3I41QMdekMWAeUQFxQzOK3UqNdoBZbYq0s22"
        "HkyCABMxfBlwwVthZzUptrYVSdW2ygWVtiq6KrYq6oq2x9qIkolEolEox9polIlEolEox+CIkkkkkkkolEAXZbprhqIvTqbpsraL"
        "R2W24N/Ktgo0ErZauhq2HzJzySUAnOO6rK59bHhYtjIkqrZFpQW2Sp3CthLIsN9pfeQ1kAW2aEy2EQq2UYK2FSFVthW0FbbH20KS"
        "qgmokokokox9r1OMulUqk4x+BE+pOFwqk0qkKLDv6pGJ4NJ5n0lB2FhYHNIjNR+gz2cHxtOfGHRaTNTbO7L1y4taAgjA+iBOBVoL"
        "Ak300DQRWgGVU5mDk+ZaIqSqPVFqHJZERXrwYIIhO7uRZwGzcb3yZDRHswYRfl8JxBwaw72sLvrmDNUPEZ/utlUBkSAPIj3VVWtB"
        "KwAn7NWIRIZcDkKXsQPShOcre+qp0mCrQWAIo0oDB8YFVQDVw5vUS6pVAFN8UqEVVQoV84QV3lVVz8FxdZdLpVKpWM/BYbGZDITS"
        "qTjPzSGRGsqFQqlUmkAo9CQxsLhKnGcXXE+Q07wppXZAfJh2pq+nCTlysTl3eesFQJWWNHM4aloICtclNW3wWggV7LX9y6haDCr0"
        "RDGpaKpaIZI8egmV6gW3diYIY7silOB+qhqmmGTZm42+dLtJtr4ev7cqj8LQFZgAfYFz28dVBipATLIsvVUAjnInLK2qVSYGACK+"
        "pU9OrJ0i0LvUcRWMedaKgoY6panXSIGYAAVG4xsNVQQUdpaAYVUAKqXdusUqVQxqI6djtapVCB88KZkqVd+ZIuqWFwulUqk435oz"
        "qjIVCqVSqTjPzWkxlwqFUmk0mkBppmJ6AC0hIsQHAtYqtSJnhtkiw/HRrQE06sUYuB7AGlO8h12jC5AlMr1HP1VaABWoK4YZ5loM"
        "euUHF28kWgAbHTtjiBVaOP8wHS7SZDQjdklEVQN05Q3ED7Zkm5uA+U8eD4SBZDAyFjQAOrgAutWLxDgqlQ1Cl31kywrmDhW1BFCA"
        "/VUBDcdKyI6VVSPQEhArbITfnuJMg2hQHlm3TjW4nbGc2RbPcZUNCoM6JgPmDhWoAUjiFVUBBggXPaVVAS0GP4E1VQHO+1UkpVX/"
        "2Q=="
    ),
    "all_styles_layers": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAMBAgQEPwH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAScAAH/k84aIBFqA/0j0oCAgMjAIdxdgICA"
        "2JBppmJ6gMkAHNwLIskAHrW+HcJIjBY1nDwdBMPDJABVGV5w3MSAF2W6a8VETiiw7+qRieDSIqSqPVFqHMlAKPQkMbCuozg4/zAd"
        "LtJkNCN2SURVA/1EkkiUSyGQA7o/ieozAGvXgt7ltpT6K7bVv6AKtqywRbb9hkpFIlEshkCfnYA37OQYAFadhliYwrZQEoq2qZQM"
        "Kra5jrW2/YRKKSKRLIZAlpIgkAdq8HCAfsFFZrbfqgaQttWOfQq27AJ1tv0mSkSiUQj9gkklEkkolGH2kiUSiSiUSiCFc0XMttJD"
        "Gxy2LJp1ttUqarZoG7ZvNOsOVpx+QSBEEjVEcikqfdG3KrYZF4rZAETYWnCIa4FvNQp5qrbF6Kq2ShgVtv3CkiUSikSiUfvIkkkk"
        "lFEolGfmRKRKJJJRKJRKIBUY65WVrK62i8ZYtgHjVbbP1QTVthUnwba1Q822jjVAx16QxYB5RAXFDM4rdSo12gFltirSzbYeTIIA"
        "EzF8GXDBW2FnNSm2thVJ1bbKBZW2Kroqtirqirb9hElEolEolGPtNEpEolEolGPwREkkkkkklEoghqIvTqbpsraLR2W24N/Ktgo0"
        "ErZauhq2HzJzySUAnOO6rK59bHhYtjIkqrZFpQW2Sp3CthLIsN9pfeQ1kAW2aEy2EQq2UYK2FSFVthW0Fbb9hSVUE1ElElElH7FT"
        "jLpVKpOMfgRPqThcKpNKpHmfSUHYWFgc0iM1H6DPZwfG058YdFpM1Ns7svXLi1oCCMD6IE4FWgsCTfTQNBFaAZVTmYOT5lqWREV6"
        "8GCCITu7kWcBs3G98mQ0R7MGEX5fCcQcGsO9rC765gzVDxGf7rZVAZEgDyI91VVrQSsAJ+zViESGXA5Cl7ED0oTnK3vqqdJgq0Fg"
        "CKNKAwfGBVUA1cOb1EuqVQBTfFKhFVUKFfOEFd5VVf3sXWXS6VSqVjPwWGxmQyE0qk4z80hkRrKhUKpVJpC4SpxnF1xPkNO8KaV2"
        "QHyYdqavpwk5crE5d3nrBUCVljRzOGpaCArXJTVt8FoIFey1/cuoWgwq9EQxqWiqWiGSPHoJleoFt3YmCGO7IpTgfqoapphk2ZuN"
        "vnS7Sba+Hr+3Ko/C0BWYAH2Bc9vHVQYqQEyyLL1VAI5yJyytqlUmBgAivqVPTqydItC71HEVjHnWioKGOqWp10iBmAAFRuMbDVUE"
        "FHaWgGFVACql3brFKlUMaiOnY7WqVQgfPCmZKlX+IuqWFwulUqk4/eqMhUKpVKpOM/NaTGXCoVSaTSaQAC0hIsQHAtYqtSJnhtki"
        "w/HRrQE06sUYuB7AGlO8h12jC5AlMr1HP1VaABWoK4YZ5loMeuUHF28kWgAbHTtjiBVadOUNxA+2ZJubgPlPHg+EgWQwMhY0ADq4"
        "ALrVi8Q4KpUNQpd9ZMsK5g4VtQRQgP1VAQ3HSsiOlVUj0BIQK2yE357iTINoUB5Zt041uJ2xnNkWz3GVDQqDOiYD5g4VqAFI4hVV"
        "AQYIFz2lVQEtBj+BNVUBzvtVJKVV/9k="
    ),
    "irreversible_styles": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAgQEPwD/XAARQl9SUAVQ"
        "BVBHV9NX01di/2QAJQABQ3JlYXRlZCBieSBPcGVuSlBFRyB2ZXJzaW9uIDIuNS4w/5AACgAAAAAALAAB/5PGNBFqA/kDgMEgHrSj"
        "hoChGBleqYCAgMYkAGmmYnr/2Q=="
    ),
    "sop_eph": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAYAAAMBAgQEAAH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAO1AAH/k/+RAAQAAMjA/5IRYxz/kQAEAAGA"
        "/5L/kQAEAAKA/5L/kQAEAAOA/5L/kQAEAASA/5L/kQAEAAWA/5L/kQAEAAaA/5L/kQAEAAeA/5L/kQAEAAiA/5L/kQAEAAmA/5L/"
        "kQAEAAqA/5L/kQAEAAuA/5L/kQAEAAyA/5L/kQAEAA2A/5L/kQAEAA6A/5L/kQAEAA+A/5L/kQAEABCA/5L/kQAEABGA/5L/kQAE"
        "ABL9ggD/kroffd1RpihE1gNbUzApuE//kQAEABPPtFT/khzcC0Ki7R6WuA4cjCg+xVKU00vDD/+RAAQAFM+0UP+SHrXA4sfPa1Nu"
        "OQm4Emsmu87a6H7/kQAEABXD6hCPtDofaGD/khY1nEF4OUFu7nMBsyCFJi8dAuStz8Dk93LOm8tIXxkhF0lsELIemyqzf/+RAAQA"
        "Fs/ATn4CU/MO/5Ih3c6Fk1T+HMJkIAmPUg1tSiazGV55GwjLCm0Y8fRBwSLry/SfHp5HKPzO6BKftkCNXHf/kQAEABfH2iEfaHx+"
        "AcD/khdlulVkLztiRsGrnc35FuwfM9MOK972WCFRijzJLW8SyLGfwN1Vn4o/fVn1FP+RAAQAGMfaXx9pdH4FYP+SKLDv6pGJ4h7j"
        "g7OS2FpdLdy1zKw5x3JHp5tkrn8zxTHeSa4DIetKuVzebkEZzF8ipKo9UWoG5aJz8k2Qc5UCcPBfMSVvyQri+aeVhcgyDK2xlmzq"
        "ccZ0EDVEaJbDa0tuv+ujoCyZ8Wj3GPZq2/4q6sPDXDV8hB2OPjSqWimODXyJ+zUvnqMzp/+RAAQAGc/Azn4GU/Mx/5Io9CQxtxPG"
        "3bvbBaklWXfMjpngBcwnfUXQFP9zGWi/w04A7zeC1EUFVp1VP4oL36zrxxchkjx5/2k9SXVJ6ptPpMnZja66O8dGIiSuz5GcSzkC"
        "eZF9vCK3vP93okC/tD9GnMoEYyYF/zVpWITjPo78BBOoz8L4wRgFU98Dd7Kx8C3O1C61toSrUwBVwMiiq29hB4mtcFn/kQAEABrf"
        "mZ35m8/MyP+Saa0XHUgzzALFteW5Ymf3phQd/0I/t/WFb4BX3kadWIYpruHMV3iUoVbLKchjtRQccNtfOP8uR5lAwLwaaMhJuju6"
        "G2mVE7f+Rx/dyCxDn0kJaNit+cboKvN6Nnm9Tef46+Iaf1GBVrh2fyPQEhAyypKWeziSbA95VAcJ2dFKaKi7OZ1tTlRP2kRnk/E9"
        "tqQL5O951tZsazyAvMK//9k="
    ),
    "roi": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAgQEAAH/XAAKQEBISFBI"
        "SFD/XgAFAAAE/2QAJQABQ3JlYXRlZCBieSBPcGVuSlBFRyB2ZXJzaW9uIDIuNS4w/5AACgAAAAACygAB/5PPtEwRYxy6H33dUaYo"
        "RNYDW1MwKbhPz7RUHNwLQqLtHpa4DhyMKD7FUpTTS8MPz7RQHrXA4sfPa1NuOQm4Emsmu87a6H7D6hCPtDofaGAWNZxBeDlBbu5z"
        "AbMghSYvHQLkrc/A5PdyzpvLSF8ZIRdJbBCyHpsqs3/PwE5+AlPzDiHdzoWTVP4cwmQgCY9SDW1KJrMZXnkbCMsKbRjx9EHBIuvL"
        "9J8enkco/M7oEp+2QI1cd8faIR9ofH4BwBdlulVkLztiRsGrnc35FuwfM9MOK972WCFRijzJLW8SyLGfwN1Vn4o/fVn1FMfaXx9p"
        "dH4FYCiw7+qRieIe44OzkthaXS3ctcysOcdyR6ebZK5/M8Ux3kmuAyHrSrlc3m5BGcxfIqSqPVFqBuWic/JNkHOVAnDwXzElb8kK"
        "4vmnlYXIMgytsZZs6nHGdBA1RGiWw2tLbr/ro6AsmfFo9xj2atv+KurDw1w1fIQdjj40qlopjg18ifs1L56jM6fPwM5+BlPzMSj0"
        "JDG3E8bdu9sFqSVZd8yOmeAFzCd9RdAU/3MZaL/DTgDvN4LURQVWnVU/igvfrOvHFyGSPHn/aT1JdUnqm0+kydmNrro7x0YiJK7P"
        "kZxLOQJ5kX28Ire8/3eiQL+0P0acygRjJgX/NWlYhOM+jvwEE6jPwvjBGAVT3wN3srHwLc7ULrW2hKtTAFXAyKKrb2EHia1wWd+Z"
        "nfmbz8zIaa0XHUgzzALFteW5Ymf3phQd/0I/t/WFb4BX3kadWIYpruHMV3iUoVbLKchjtRQccNtfOP8uR5lAwLwaaMhJuju6G2mV"
        "E7f+Rx/dyCxDn0kJaNit+cboKvN6Nnm9Tef46+Iaf1GBVrh2fyPQEhAyypKWeziSbA95VAcJ2dFKaKi7OZ1tTlRP2kRnk/E9tqQL"
        "5O951tZsazyAvMK//9k="
    ),
    "poc": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAgQEAAH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAD6AAL/XwAQAAAAAQMBBAAAAAEEAwD/k8+0"
        "TBFjHLoffd1RpihE1gNbUzApuE/D6hCPtDofaGAWNZxBeDlBbu5zAbMghSYvHQLkrc/A5PdyzpvLSF8ZIRdJbBCyHpsqs3/H2l8f"
        "aXR+BWAosO/qkYniHuODs5LYWl0t3LXMrDnHckenm2SufzPFMd5JrgMh60q5XN5uQRnMXyKkqj1RagblonPyTZBzlQJw8F8xJW/J"
        "CuL5p5WFyDIMrbGWbOpxxnQQNURolsNrS26/66OgLJnxaPcY9mrb/irqw8NcNXyEHY4+NKpaKY4NfIn7NS+eozOn/5AACgAAAAAC"
        "ygEC/5PPtEwRYxy6H33dUaYoRNYDW1MwKbhPz7RUHNwLQqLtHpa4DhyMKD7FUpTTS8MPz7RQHrXA4sfPa1NuOQm4Emsmu87a6H7D"
        "6hCPtDofaGAWNZxBeDlBbu5zAbMghSYvHQLkrc/A5PdyzpvLSF8ZIRdJbBCyHpsqs3/PwE5+AlPzDiHdzoWTVP4cwmQgCY9SDW1K"
        "JrMZXnkbCMsKbRjx9EHBIuvL9J8enkco/M7oEp+2QI1cd8faIR9ofH4BwBdlulVkLztiRsGrnc35FuwfM9MOK972WCFRijzJLW8S"
        "yLGfwN1Vn4o/fVn1FMfaXx9pdH4FYCiw7+qRieIe44OzkthaXS3ctcysOcdyR6ebZK5/M8Ux3kmuAyHrSrlc3m5BGcxfIqSqPVFq"
        "BuWic/JNkHOVAnDwXzElb8kK4vmnlYXIMgytsZZs6nHGdBA1RGiWw2tLbr/ro6AsmfFo9xj2atv+KurDw1w1fIQdjj40qlopjg18"
        "ifs1L56jM6fPwM5+BlPzMSj0JDG3E8bdu9sFqSVZd8yOmeAFzCd9RdAU/3MZaL/DTgDvN4LURQVWnVU/igvfrOvHFyGSPHn/aT1J"
        "dUnqm0+kydmNrro7x0YiJK7PkZxLOQJ5kX28Ire8/3eiQL+0P0acygRjJgX/NWlYhOM+jvwEE6jPwvjBGAVT3wN3srHwLc7ULrW2"
        "hKtTAFXAyKKrb2EHia1wWd+Znfmbz8zIaa0XHUgzzALFteW5Ymf3phQd/0I/t/WFb4BX3kadWIYpruHMV3iUoVbLKchjtRQccNtf"
        "OP8uR5lAwLwaaMhJuju6G2mVE7f+Rx/dyCxDn0kJaNit+cboKvN6Nnm9Tef46+Iaf1GBVrh2fyPQEhAyypKWeziSbA95VAcJ2dFK"
        "aKi7OZ1tTlRP2kRnk/E9tqQL5O951tZsazyAvMK//9k="
    ),
    "tile_parts": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAACAAAAAgAAAAAAAAAAAADBwEBBwEBBwEB/1IADAABAAEBAgQEAAH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAAkAAP/k8+0GAjwXIByP8HyBA9yt3/A+EMG"
        "RxP/kAAKAAAAAABNAQP/k8PqBIB0OD6gUA5iGoMMC78Qff8NX8PqBYHyBIfaCg4948cPDg01Zw4Je2L3w+oFgHQoB8IYDkB4IecN"
        "kxCRf/+QAAoAAAAAAIwCA/+Tx9oVH2hMfgGAItJnW6fBuXzk3yS0t5P5wDCfECNs9WFikcj99g3LX8/AKj7QuPwDQCDqKemZVPFa"
        "np8hci9DmqdZbFkLDyIht1Ic+t5Yul60wT/H2hc/AKn5hoAiHiSmfkuEXzrTNyPLdqIDTWtmRLwkarc44GGcPueKqGl//5AACgAB"
        "AAAAJgAD/5PD5woND8//f8+0FATLTIhXx9QKDs7bS1//kAAKAAEAAABWAQP/k8PqBYfUCQ+0GApkGS8fBi7R4QuwAU4ef8/AFj7Q"
        "WfmDAAysl3jXDBk8+3sPhmdCSwDH2gsfaCR+AKAI5x/1yw/emqkFw1javP+QAAoAAQAAANcCA/+Tx9olH2iMfgKACef95dcHXZg8"
        "NOQcSe/k4rBfHcHIJRACGAlSXyIcFk3in1serrSzYl19LuiQPI1S8y94KAZEj8/AUn4Cc/MVAsxoYiVQ4Rb3D2/TESRHI9xpkn8k"
        "k9ftnvS/AkB3cr1NWkKGOci3D0MoMBBVQKzo3MvdUo/o1Xpq4phmz8BSfgKT8xUYm0dRuSiMoRufPvsWbLCLZEhLAxGLGODyZRZp"
        "PeK6nD5HzqJZoQ3rFQridmgw99SF+45B3iXWUOAvvxG3/5AACgACAAAAHwAD/5PD5wQLc8+0DAnM48+0DANhH/+QAAoAAgAAACAB"
        "A/+Tx9oGAV63z8AMCL19w+oDC9hH/5AACgACAAAAJwID/5PH2goBWHMnhMfaCg2Xh3ifz8AYD1P1XFcf/5AACgADAAAAIQAD/5PP"
        "tBQI8Fx/BcD4QgOYwPhDDFvr/5AACgADAAAARQED/5PD6gWAdCgHwhAOCktGrwt/C1/D6gSD5wcfgBgQjMDVCtJ/CyDhw+oEgfIC"
        "j8AMDPJjYQNzC1+i/5AACgADAAAAZwID/5PD6giH1AsPtBwVa9hHfe51TxYweE5nFn311LO2v8/AJj7QaPwBgCBrJo8hMRQC7xkF"
        "l0Fh4Rbsiu1DRt+YTH2gsfgDgBubCfZFwZVt9xhH3BaHFfkrTxK8P/+QAAoABAAAACUAA/+Tw+cIBFH0Hc+0FArvzQcuz7QUDJDX"
        "43//kAAKAAQAAABJAQP/k8PqBYHyAoHzgw5FQ8F/DDEMKL/H2gsfaBw+0DAKxS0dIQGPhwV8k8faCw+oDj8AMA2uOCq/C9qbC48i"
        "/5AACgAEAAAAkgID/5PH2h0PqCY/ALANJX4Lo8uZxjQ+LvAHvwK/Bg46qUmvXwwvB1bF/KgrEv9/x9odPwCp+YYADCKohGOBbggJ"
        "yvBlAU8W+aa8YlgRKIMNEIUN9yOl8RwES+0/35h8/ALj8AoEEd9/LuvnguLiKL0LJNISyGo5ekhBoA+WfwMIpVEehOTUIdf/kAAK"
        "AAUAAAAgAAP/k8HyAgOKz7QQC0TXf8fUBguQ3/+QAAoABQAAABwBA/+TwHwggAHB84EIx9oEBX//kAAKAAUAAAAiAgP/k8/ADAX9"
        "YcPqBARI/3/PwBALUZN//9k="
    ),
    "subsampled": (
        "/0//UQAvAAAAAAAiAAAAGQAAAAEAAAAAAAAAIgAAABkAAAAAAAAAAAADBwICBwICBwIC/1IADAAAAAEBAgQEAAH/XAAKQEBISFBI"
        "SFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAAL0AAH/k8+0SBijX424fTc3zXbU7oqedZZ7"
        "v8+0QBvJrxXzyhN3HpG+SQnd9O3PtEQPP56K1GeFf/PG5dTsIKlbf8faIx9obH4BwA+0hcLJ5v1jMicpjJuoPfS8DoTkmJUtDYPX"
        "W1kUwwUn8q31eOAwySJfLXi/z8BKPtDY/ANADLvs8dxeKD07n2f93lkQwNgFE5UM4nvoVO+aMIbd2hwj41QfkYKnsgXImw3PwEof"
        "UGT8xAAK6pW8Sgv2V3hUHVhA8IAX8n8JwhbkrEdZSwxXb78dR6lS/4RMAWKXeNVI2PzSx9ptH2mUfgYgLcLiUVBmWK1OPD1mjhx6"
        "C6S2mAVXS8c3xlweMJWEObO2DdnlgNY/bR2TXu/6564l1nLXkznPEYSzQUOnh1wdLn1L+IijjTa/rprpFQRGIbBn7dwrlxHrsH7I"
        "V5x9sTdUm2JD7+wG/38AGXXCuMxKFxqcysRXfAKvqO++QCNXNQTkOonlsEvJjtCADKBJqyJYG0gZvV8u7b+b35n8/A1n5mgKGVol"
        "T+jtZAOTndE6FDHdDWsxlQvpchlx2NV+vw1Wt3V43jLLDexun157z1lREL9Y7xh0Fk37i6eoN0ytyD8erE701DSTeBFcU3Ro3cl1"
        "YUqhGyB0VoPolhuFfyt5Z50MsmyOYwbxv508VdZtb11HZGhYXwyfzVf0q8GbKaSYPKmoSFs/OlODwbNzf9z63WTuO7XYoSNCojhw"
        "t8JYgJo8q9uEIJBfV+/fmg35m8/M3EExL5qrDXpY9ZZzU9eYtx1Nq0T2fZ8+cMHTACW3LInnanes+7qzXHetMQyLSRPRhRdO43mc"
        "0tCV1eojvgc9JG5/NjUFSfrk05p8thtPwDuE5m6CJFVWXgwiNtXsrWlrR+bq1vmGc2IjCn0yLNCzuL7D8zV2brZX2wn5fP8fRD7F"
        "XdJGyGLXKgcqAqN0ycU/LqmrXosjLTX/EqKRrwhfofKIwIHtuQanV0z3YsEXPr//2Q=="
    ),
    "bits12": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADCwEBCwEBCwEB/1IADAAAAAEBAgQEAAH/XAAKQGBoaHBo"
        "aHD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAASrAAH/k8/kgBULrLdo8etUFDu2r/3j+hEH"
        "JBwJqjJhzXGy7Qleg12X3+CED3JCD054JboQjm1luBIevdLDkq7HCmGK3j1h4Q8xXSlb3+CAD3Up8qfss17DDf3Lk+TDYI9MBEnh"
        "UvOiUxUt3vh4qHfD9hmP5GYfyKgX3ujemSHPA+tzwRVvRqbUV9PscnsdcHc/C3woMuJ8z5XGFWthucnUqA031pVat0ecvwpYOGBq"
        "UUXFWAczrzdzKZJ+y1vfH8/wNz/A1H+BYB7xkFYWBywzLffSgSltw7K5e146fYhzSR39rwhj7XLUs0h8034iUCMQSl6jeFRxbxuj"
        "Awh/A8rBy8wp6qtK9HfP1Qkdbw/7Oiip78/wNz/AxP9gAsAjRDkj2pjhjtiwXCOKuzkhd0r0sKT8WtB+xDEG7lSIqsnPX4wZePyy"
        "48/hZkrcCV6rGBUSkl47uGIqQBxKV0622aGm1WdBro9/x/KvP8K8f4TgJL/lU54Iq+/r0HDH2HjX2NCAMDmlb9vb9/38nALzqTBF"
        "b6UIusCPFASqVid+y9OSdRfzNNU1gdBLl8mEXn9nesKAvMB7ZRdcBY8If2RZaVrjn/EIHqEfJsIOTwcYq416r19LnQrwgD407rZx"
        "DR+KWkxxLemTSKpA7KNTx3ZVV0w7PQ9c/1KrfyxcXi96GCb7B7gliLGct8pE0g2JGGQv572k/058t24sImDLbbMnK/N/+CrcxD+s"
        "pY/1cxiC8mnYKsNEVZwH2ZpKviaEjrSn/H8/uC1A4kkiYubbxM9CONTJVCv/LaTbJ6MFo75eo+YEO0aAZ2SofcnebNN3z/C9P8Lc"
        "/2AKoA9TWisl3fwqhZ9MpLi1WIPz1iO5Y+tSMj8G8rue2bEd9ws+lpIYu3uuawNQ7OmiYIHDy/4ogdb+BB2iuTIi5RgAitaCUipg"
        "P8u3xMJCh7NeQQpmMyZbXgQHi5zjxT8Um9MoqmtURGqbVD9pL3HZ5x9UrFBDcc0PQhq0RcNBke2IvYhyBM+Bt1aNK5s36VqBk08q"
        "MAdhmLfMNJrY4SKVwIPu9/Bq2NhyTSmmZatZGSgzFr+0xwp5mVHHG7W9P93D3roWNPh2B3teWamaYZiztHzTDSWunHfyP07cPWpd"
        "3yWhAXsGtO04wbswSdi8TnBsG2rcVcnsaZ8ZqBzDsIf32NzFmEao8nA2N1XbOZxAy8/wv3/gC9P/ACuAA47zUUM6caVFUDAhIdTe"
        "bGa9+qjiUv7wvBTmqkvGX4NIsiJ7t8fWMmF6IjViFatl9jUra9at54dvVfFWaI9U3H9zPXm58FIq9QKZp034Bh5mQmhMWU138D2j"
        "RiZH7H9+lAOuWL9Swyehje74rLDtLRW1tESvJGxuo0KFaWwIOI70g2d9ksMUMoqgLps2mdIHmAhPzVxvbP9tW2307z6kgRVO6L+q"
        "nnXYpHISF6vcHX8ISn5jjnsXZ6/ofWP3Fqaw1W5eiuHJMHNlkybmKwfIwsE5CR8ZKmp4DpzASzsLw4ktUQHiaKQeeKd6uVlg2/ju"
        "bXQMgYs8Xf86a9yTfZc/b5ILLdXSZeQstSZHn5xsFTHx/zd//9k="
    ),
    "bits12_irreversible": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADCwEBCwEBCwEB/1IADAAAAAEBAgQEAAD/XAARQn9ScAVw"
        "BXBHd9N303di/2QAJQABQ3JlYXRlZCBieSBPcGVuSlBFRyB2ZXJzaW9uIDIuNS4w/5AACgAAAAAEeQAB/5PH/gBGF/keZoxrJlti"
        "mKxkoKAc0zM5o+XuuozhTk79Xg1t2k4mSb/D/BEAD1UMzujmBBTxUCGVF9BK6XHq4aFH8sIPm+JMhcJN1gc/98P8EYAPdSYMxU+Q"
        "JYJkSMmKgtnYrnv4YdF6mv4p0uso0sKl5BZFP8P5G4/wNw/kUBffHkz1H5TkN4xpBLikzkbYu3psf7JTF1I/fwt8MY+TKww6ZUKY"
        "bBnSUsD1dDz5vx83EbLGvw7tY1nICdIdxZN8LlsZUdOvuO2Nw/kZh/IzD+RQA4gbBYIfeM3ea0+Nk3xL+SSMlSbLsiBffwwxcRyW"
        "R2wKFJ8VTNhdfrjFbtXbaQETVn8E3mli/kyQ0Q7WmPV9MEgaB7v/P8P5G4fyLw/kUAAE6sdetGpadwXpl3vxlCsOCuu3za130qwX"
        "uwbUg+4DLBctniVOBbKx0KMfJzukJHN8EpHRhYQPrDuotAI3acWUi9ZbKTzD+VWP8LMP5TgMm5eYIixCbwC7MRFzitj2dIggdNuM"
        "MtbB9k/T+ZXwBRVLP3jgu7uf8Kp3wrBxCtHhpiukFL8qOl/su1da8CFEl533tNGTzLYh7bp9+BgZn0zMX11oJrwros6BvabbFMRc"
        "Pf3CGQmkBHR+schkMsnBaYv58HnJVMOx7aNQevnreiibx4pHKyo/sAN9an5B8lbc6/E75V5jYEq9/wFZpIrJPgs4HmusdMVS48bf"
        "7r8jqcnhM9TSyCqk05fSjbPYPQIdC0aVWdZV9PATkq+Trs0Jd+7NIcnIR/3CWHxAwdkN9uk4dKxI5Z5/YttITbKtw2D3DFzPmxWB"
        "UF4Gi1/D+VaH8qkP5SwPU1pkX8OX34NTUc4MQoKNR8jpQQnaQDVIWEGFNg2WYC+gzI55IlWRpxrjxng78mZR/eyEhbZTLCS/27ao"
        "2S9j4vkIma7DRJYlOlQlnm+YwuvelmWWvRSvj+kLgUe60UUoSxwghBQ/jpwPOR3NRRnS0C6zNtdnaiwsAMCHsZ6OTY85ZI+LkQKU"
        "H4/cSXK67wtC6rO6pDCfjrlB3ecKaFmCZ4c9+1w/BPlkzwnMQZKdE9XqQfvV+MjGF5Rw8Rp8cT3ykHdN7tLjGI4tp6b/E+aykA8c"
        "p2FYzE1HwxcoazAgGYzdlPb4rqHNLc9WJ1xi6unaE0LyOcP5V4/wrR/hNAOO8w6y7a6s7Azm+7F6+MjCycnc7qAjdfjUWfMW4dQi"
        "9o74V/yBNPEt0Db4WFfNew3GB2ITeVxgEGF912mkSTBijI/sHLVsmCoJZVbDE+pqvHFVyaWjA0E18QgZ+L7FDrWAirmHxUMCt2vI"
        "vc5yQVPv+DAa0fjVPnpuEdoSKy6WRZoqOzAWLyyvtuTnNyEtbFe4Rtx2+F+yrQk1QvhHcXMdirxp/uOEvcPJ7u+IZRSQp9gPyRk+"
        "N8MENFYu/i12YAfreF43MMsHdj191tIwAtR1NS1+GeeLKSC0tZokuKyisqO4KdqJnMkM2d+p4Vfg5UjwCLD8+7RurRP/2Q=="
    ),
    "precincts_pcrl": (
        "/0//UQAvAAAAAAARAAAADQAAAAAAAAAAAAAAEQAAAA0AAAAAAAAAAAADBwEBBwEBBwEB/1IADwEDAAEBAgAAAAEiM0T/XAAKQEBI"
        "SFBISFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAANUAAH/k8+0QBFhXKl7qLpH6j8WhUUf"
        "UC/D6hCPtCofaGAWNZxBeDlBbu5zAbMghSYvHS+ypKvmZoI6rxkhF0lsELIemyqzf+L6gr9on+0I/aHY/aFftEr6gX9oTifUFX2i"
        "d9oN/AKAHNIo4m2k/2H87wnPrmP6Bm/IuHUDThVVU1hfhB8V2w6/91CJggVunVi6Z480ViZwB3A/IsORavNIK8u5VQnJ2d55sK/9"
        "iWqeA4CTmZdZPxYvVs/mGCryO+xrAIMvHjKENHCLOR7r9wa/RiD4BPsCUjKFuOvCtA14mH8Yq08CqJsMLdW2C+0zHcHHz7REHNwM"
        "wOFlz9ONfEgP+P9EPLHPwE5+AbPzDiHdzoWTVP4cwmQgCY9SDW1KJrMZbjzKpHuIPVoMzf9/Hp5HKPzO6BKftkCNXHfl9oV/AU/g"
        "E32h2fwC/0BO+0G/gFZfgHfzFo+oG/mGACErcgbni+oxM0sCzGix5LMqLApLRGyumEMsRC/gvxwoBllEw9bIogwYqBrK6r7GM0kU"
        "R6S/IZr5uzosdO4533ckkKSXRWctdpxnvAqJ+8ixYIFPGRLfgW1fFvmmuvuMqYWBsSHzNJXNHJMQrOLn9FovD0MoMJ9GZgjH+aF8"
        "yK43wgXHEqX93xINxDyTLxCFDfiBQeINLBwcf8+0PB6+Rcoot56ub2/z8mKkncfaIR9oZH4BwBdlulVkLztiRsGrnc35FuwfIv6d"
        "sV/o4D8mA38SyLGfwN1Vn4o/fVn1FOn2hl+Ap/MKvwD9fgF/zFr8AW/AKz+Yb/MT/mD34BQiHiTYprSOuAZtdHkYnKBx3CVwu2ki"
        "iDoPewUP2mo9AxwoYTbA/k/gNX8Cv/A2mYDI99EG+ajL0hEjyZp5KOoV6XDenyTc5TgKWG4JfYw0q/6vbmQeZrwRo4cYXxn5UxLI"
        "KGo11RoW1xQkVyFFbemVpxcktONhFQrifpcgDSA8w+H1YN20D2aCZhX8s6kAW/kDCLBIO9Jdhn51w+cKEYj2LsfH2ggEl1LP4/aC"
        "/tAwFDOTFrcGO2nPtBQKSV+tm8/AEAWuJF/n8Aa+0DAPOv9EI3cLsA3PtBgUL2rBv5/H2ggGeMLn7+YLPtAwD79etK8LCcH/2Q=="
    ),
    "thin_column_odd_origin": (
        "/0//UQAvAAAAAAACAAAACAAAAAEAAAABAAAAAgAAAAgAAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAQQEAAH/XAAHQEBISFD/"
        "ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjD/kAAKAAAAAABBAAH/k8faCR+AMAc/az8IvCnBpB/PwBJ+YOAC"
        "8zhdFDMB5e+zP9+YLPzBwASEn8Z/EYZ6Wj9kP//Z"
    ),
    "thin_column_odd_origin_irreversible": (
        "/0//UQAvAAAAAAACAAAACAAAAAEAAAABAAAAAgAAAAgAAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAQQEAAD/XAALQkgkV9NX"
        "01di/2QAJQABQ3JlYXRlZCBieSBPcGVuSlBFRyB2ZXJzaW9uIDIuNS4w/5AACgAAAAAAOwAB/5PB9QHB9QIABn2qCOOyCcH1AcD5"
        "woAChLAQ2ES9v8D5wkH1AoALxzE/Efi0/B//2Q=="
    ),
    "thin_row_odd_origin_irreversible": (
        "/0//UQAvAAAAAAAKAAAAAgAAAAEAAAABAAAACgAAAAIAAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAQQEAAD/XAALQkgkV9NX"
        "01di/2QAJQABQ3JlYXRlZCBieSBPcGVuSlBFRyB2ZXJzaW9uIDIuNS4w/5AACgAAAAAARAAB/5PB9QLD7QcC5m1KRww+vY2bsb/B"
        "9QLB9QMACmlljvcK+H6jcmXB9QLB9QMADdI9mX8OSjb8Md//2Q=="
    ),
    "tiny_offset_irreversible": (
        "/0//UQAvAAAAAAAFAAAACgAAAAMAAAAFAAAABQAAAAoAAAAAAAAAAAADBwEBBwEBBwEB/1IADAAAAAEBAQQEAAD/XAALQkgkV9NX"
        "01di/2QAJQABQ3JlYXRlZCBieSBPcGVuSlBFRyB2ZXJzaW9uIDIuNS4w/5AACgAAAAAAWwAB/5PD6gMFok/D6gMKLD/D6gMCyZ/A"
        "+cFD7QSD6gQDewwDSrcMI5ZfwPnBw+0Eg+oDDCl/A0ttfwEniMH1AcH1AkPtBQthJwqi9ckGCR7/f//Z"
    ),
}


def _pillow(data: bytes) -> np.ndarray:
    im = Image.open(io.BytesIO(data))
    out = np.array(im.convert("L" if im.mode in ("L", "LA", "I;16") else "RGB"))
    return out[:, :, None] if out.ndim == 2 else out


def _encode(im: object, **kw: object) -> bytes:
    b = io.BytesIO()
    im.save(b, "JPEG2000", **kw)  # type: ignore[attr-defined]
    return b.getvalue()


def _image(h: int, w: int, channels: int, kind: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    if kind == "noise":
        a = rng.integers(0, 256, (h, w, channels))
    elif kind == "gradient":
        a = (x * 7 + y * 3)[:, :, None] + np.arange(channels) * 60
    elif kind == "flat":
        a = np.full((h, w, channels), 77)
    else:  # checkerboard
        a = np.repeat((((x + y) % 2) * 255)[:, :, None], channels, axis=2)
    return (a % 256).astype(np.uint8)


def _pil(a: np.ndarray, mode: str) -> object:
    return Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a, mode)


def _check(data: bytes) -> np.ndarray:
    expected = _pillow(data)
    got = decode_jpeg2000(data, None)
    assert got.dtype == np.uint8 and got.shape == expected.shape
    assert np.array_equal(got, expected), f"max difference {np.abs(got.astype(int) - expected).max()}"
    return got


# ------------------------------------------------------------------------------------- ONNX vector
def test_onnx_vector() -> None:
    import onnx
    from onnx import numpy_helper

    case = node_cases_dir() / "test_image_decoder_decode_jpeg2k_rgb" / "test_data_set_0"
    tensors = []
    for name in ("input_0.pb", "output_0.pb"):
        t = onnx.TensorProto()
        t.ParseFromString((case / name).read_bytes())
        tensors.append(numpy_helper.to_array(t))
    got = decode_jpeg2000(tensors[0].tobytes(), None)
    assert got.shape == (32, 32, 3) and np.array_equal(got, tensors[1])


# ---------------------------------------------------------------------------- streams from Pillow
@pytest.mark.parametrize("size", [(1, 1), (13, 17), (32, 32), (1, 9), (40, 71)])
@pytest.mark.parametrize(("mode", "channels"), [("L", 1), ("RGB", 3), ("RGBA", 4)])
@pytest.mark.parametrize("kind", ["noise", "gradient", "flat", "checker"])
def test_reversible_sizes_modes_contents(size: tuple[int, int], mode: str, channels: int, kind: str) -> None:
    a = _image(*size, channels, kind, seed=size[0])
    got = _check(_encode(_pil(a, mode)))
    # Lossless: the original pixels (alpha dropped).
    assert np.array_equal(got, a[:, :, : 1 if channels == 1 else 3])


@pytest.mark.parametrize("progression", ["LRCP", "RLCP", "RPCL", "PCRL", "CPRL"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"precinct_size": (32, 32), "num_resolutions": 3},
        {"quality_layers": [40, 10, 1], "quality_mode": "rates"},
        {"tile_size": (24, 20), "tile_offset": (3, 5), "offset": (7, 9), "codeblock_size": (8, 16)},
    ],
)
def test_progressions(progression: str, options: dict[str, object]) -> None:
    im = _pil(_image(45, 61, 3, "noise", seed=3), "RGB")
    _check(_encode(im, progression=progression, **options))


@pytest.mark.parametrize(
    "options",
    [
        {"num_resolutions": 1},
        {"num_resolutions": 4, "codeblock_size": (4, 64)},
        {"codeblock_size": (16, 16)},
        {"precinct_size": (64, 64), "num_resolutions": 2},
        {"tile_size": (16, 16)},
        {"tile_size": (20, 24), "tile_offset": (3, 5), "offset": (7, 9)},
        {"no_jp2": True},
        {"mct": 1},
        {"mct": 0},
        {"plt": True},
        {"quality_layers": [30, 45], "quality_mode": "dB"},
        {"irreversible": True},
        {"irreversible": True, "quality_layers": [20]},
        {"irreversible": True, "quality_layers": [40, 10], "progression": "RPCL"},
        {"irreversible": True, "tile_size": (16, 16), "offset": (3, 1)},
        {"irreversible": True, "num_resolutions": 1},
    ],
)
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_writer_options(options: dict[str, object], mode: str) -> None:
    a = _image(37, 53, 3, "noise", seed=5)
    a[:, :20] = _image(37, 20, 3, "gradient")
    _check(_encode(_pil(a[:, :, :1] if mode == "L" else a, mode), **options))


def test_irreversible_larger_image_exact() -> None:
    y, x = np.mgrid[0:96, 0:128]
    a = np.stack([(x + y) % 256, (x * 3) % 256, (y * y // 40) % 256], axis=2)
    a = np.clip(a + np.random.default_rng(2).integers(-25, 25, a.shape), 0, 255).astype(np.uint8)
    for rate in ([8], [50, 20], None):
        _check(_encode(Image.fromarray(a), irreversible=True, quality_layers=rate))


def test_reversible_128_pixels_is_lossless() -> None:
    y, x = np.mgrid[0:96, 0:128]
    a = np.stack([(x * 2) % 256, (y * 5) % 256, (x * y) % 256], axis=2)
    a = np.clip(a + np.random.default_rng(8).integers(-40, 40, a.shape), 0, 255).astype(np.uint8)
    assert np.array_equal(_check(_encode(Image.fromarray(a))), a)


def _random_options(rng: np.random.Generator, h: int, w: int) -> dict[str, object]:
    kw: dict[str, object] = {}
    if rng.random() < 0.6:
        kw["progression"] = ["LRCP", "RLCP", "RPCL", "PCRL", "CPRL"][int(rng.integers(0, 5))]
    if rng.random() < 0.4:
        kw["quality_layers"] = sorted((int(v) for v in rng.integers(1, 60, int(rng.integers(1, 4)))), reverse=True)
    if rng.random() < 0.3:
        kw["num_resolutions"] = int(rng.integers(1, 7))
    if rng.random() < 0.3:
        kw["codeblock_size"] = (int(2 ** rng.integers(2, 7)), int(2 ** rng.integers(2, 7)))
    if rng.random() < 0.3:
        kw["precinct_size"] = (int(2 ** rng.integers(3, 8)), int(2 ** rng.integers(3, 8)))
    if rng.random() < 0.3:
        kw["tile_size"] = (int(rng.integers(8, 40)), int(rng.integers(8, 40)))
        if rng.random() < 0.5:
            kw["tile_offset"] = (int(rng.integers(0, 5)), int(rng.integers(0, 5)))
    # OpenJPEG's 9-7 encoder asserts on one-sample lines, so only larger untiled images go lossy.
    if rng.random() < 0.3 and "tile_size" not in kw and min(h, w) >= 16:
        kw["irreversible"] = True
    if rng.random() < 0.2:
        kw["no_jp2"] = True
    return kw


def test_random_streams() -> None:
    # A seeded sweep over sizes, modes and writer options (streams Pillow cannot read back are skipped).
    rng = np.random.default_rng(2024)
    checked = 0
    for _ in range(60):
        h, w = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        mode, channels = [("L", 1), ("RGB", 3), ("RGBA", 4)][int(rng.integers(0, 3))]
        a = _image(h, w, channels, ["noise", "gradient", "checker"][int(rng.integers(0, 3))], int(rng.integers(0, 99)))
        try:
            data = _encode(_pil(a, mode), **_random_options(rng, h, w))
            _pillow(data)
        except (OSError, ValueError):  # options the writer refuses or a stream it cannot read back
            continue
        _check(data)
        checked += 1
    assert checked >= 40


def test_sixteen_bit_grey_la_and_signed() -> None:
    rng = np.random.default_rng(9)
    v = rng.integers(0, 65536, (19, 23)).astype(np.uint16)
    v[:5] = np.arange(23) * 10
    im16 = Image.frombytes("I;16", (23, 19), v.tobytes())
    for kw in ({}, {"irreversible": True}):
        got = _check(_encode(im16, **kw))
        if not kw:
            assert np.array_equal(got[:, :, 0], np.minimum(v, 255))  # Pillow's I;16 -> L clips
    _check(_encode(Image.fromarray(rng.integers(0, 256, (9, 11, 2)).astype(np.uint8), "LA")))
    _check(_encode(Image.fromarray(rng.integers(0, 256, (9, 11, 3)).astype(np.uint8)), signed=True))


# --------------------------------------------------------------------- streams from opj_compress
@pytest.mark.parametrize("name", sorted(_FIXTURES))
def test_opj_compress_streams(name: str) -> None:
    _check(base64.b64decode("".join(_FIXTURES[name])))


def test_fixture_options_are_present() -> None:
    # The fixtures do exercise what their names say: code-block style bits in COD, markers present.
    def cod_style(data: bytes) -> int:
        i = data.index(b"\xff\x52")
        return data[i + 12]

    fx = {k: base64.b64decode("".join(v)) for k, v in _FIXTURES.items()}
    assert cod_style(fx["bypass"]) == 1 and cod_style(fx["termall"]) == 4 and cod_style(fx["all_styles"]) == 63
    assert b"\xff\x91" in fx["sop_eph"] and b"\xff\x92" in fx["sop_eph"]
    assert b"\xff\x5e" in fx["roi"] and b"\xff\x5f" in fx["poc"]
    assert fx["tile_parts"].count(b"\xff\x90") > 4


# ------------------------------------------------------------------------------ corrupt streams
def _mutations(data: bytes, rng: np.random.Generator, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        d = bytearray(data)
        r = rng.random()
        if r < 0.35:
            d = d[: int(rng.integers(0, len(d)))]
        elif r < 0.7:
            for _k in range(int(rng.integers(1, 4))):
                d[int(rng.integers(0, len(d)))] = int(rng.integers(0, 256))
        else:  # headers: the first 160 octets
            d[int(rng.integers(0, min(160, len(d))))] = int(rng.integers(0, 256))
        out.append(bytes(d))
    return out


def test_truncated_and_mutated_streams_never_escape() -> None:
    rng = np.random.default_rng(11)
    sources = [
        _encode(_pil(_image(13, 17, 3, "noise"), "RGB")),
        _encode(_pil(_image(16, 16, 1, "gradient"), "L"), irreversible=True, tile_size=(8, 8)),
        _encode(_pil(_image(21, 19, 3, "noise"), "RGB"), progression="CPRL", quality_layers=[20, 5]),
        base64.b64decode("".join(_FIXTURES["all_styles"])),
        base64.b64decode("".join(_FIXTURES["sop_eph"])),
        base64.b64decode("".join(_FIXTURES["poc"])),
    ]
    limits = Limits(max_tensor_elements=1 << 16)
    outcomes: dict[str, int] = {}
    for src in sources:
        for data in _mutations(src, rng, 100):
            t0 = time.perf_counter()
            try:
                out = decode_jpeg2000(data, limits)
                assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] in (1, 3)
                kind = "image"
            except CorruptImage:
                kind = "corrupt"
            except LimitError:
                kind = "limit"  # a mutated SIZ asking for more than the (small) limit
            except EvaluationError:
                kind = "refused"  # a mutated header naming an unimplemented feature
            assert time.perf_counter() - t0 < 2.0
            outcomes[kind] = outcomes.get(kind, 0) + 1
    assert outcomes.get("image", 0) > 0 and outcomes.get("corrupt", 0) > 0


@pytest.mark.parametrize(
    "data",
    [b"", b"\xff\x4f\xff\x51", b"\xff\x4f\xff\x51\x00\x29" + b"\x00" * 39, b"\x00\x00\x00\x0cjP  \r\n\x87\n"],
)
def test_short_streams_are_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptImage):
        decode_jpeg2000(data, None)


def test_size_limit_checked_before_decoding() -> None:
    data = _encode(_pil(_image(40, 50, 3, "flat"), "RGB"))
    with pytest.raises(LimitError):
        decode_jpeg2000(data, Limits(max_tensor_elements=40 * 50 * 3 - 1))


def test_huge_declared_size_is_refused_cheaply() -> None:
    # SIZ claiming 2**31 x 2**31 samples: refused by the size limit before any allocation.
    data = bytearray(_encode(_pil(_image(8, 8, 1, "flat"), "L"), no_jp2=True))
    data[8:16] = (0x7FFFFFFF).to_bytes(4, "big") * 2
    with pytest.raises(LimitError):
        decode_jpeg2000(bytes(data), None)


def test_palette_is_refused() -> None:
    data = _encode(_pil(_image(4, 4, 1, "flat"), "L"))
    i = data.index(b"colr")
    pclr = (13).to_bytes(4, "big") + b"pclr" + b"\x00\x01\x01\x07\x00"
    # Insert a pclr box into jp2h (fixing the super-box length).
    j = data.index(b"jp2h")
    lbox = int.from_bytes(data[j - 4 : j], "big") + len(pclr)
    patched = data[: j - 4] + lbox.to_bytes(4, "big") + data[j : i - 4] + pclr + data[i - 4 :]
    with pytest.raises(EvaluationError, match="palette"):
        decode_jpeg2000(patched, None)


# ---------------------------------------------------------------------- packed packet headers
def _split_packets(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes, list[tuple[bytes, bytes]]]:
    """Split a one-tile, one-tile-part codestream into (main header, SOT..SOD, [(header, body)])."""
    import onnxcore.libs.image.jp2 as jp2

    # Each packet's header starts where a BitReader is made; its body length is in what the header
    # parser returns.
    entry: list[int] = []
    bodies: list[int] = []
    real_parse = jp2.read_packet_header
    real_init = jp2.BitReader.__init__

    def parse(*args: object) -> object:
        contrib = real_parse(*args)  # type: ignore[arg-type]
        bodies.append(sum(n for _cb, chunks in contrib for _s, n in chunks))
        return contrib

    def init(self: object, buf: bytes, pos: int, end: int) -> None:
        entry.append(pos)
        real_init(self, buf, pos, end)  # type: ignore[arg-type]

    monkeypatch.setattr(jp2, "read_packet_header", parse)
    monkeypatch.setattr(jp2.BitReader, "__init__", init)
    decode_jpeg2000(data, None)
    monkeypatch.undo()
    sot = data.index(b"\xff\x90")
    sod = data.index(b"\xff\x93", sot) + 2
    tile = data[sod:-2]
    ends = [*entry[1:], len(tile)]
    packets = []
    for begin, body, end in zip(entry, bodies, ends, strict=True):
        packets.append((tile[begin : end - body], tile[end - body : end]))
    return data[:sot], data[sot:sod], packets


@pytest.mark.parametrize("where", ["PPT", "PPM"])
def test_packed_packet_headers(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    im = _pil(_image(21, 27, 3, "noise", seed=4), "RGB")
    data = _encode(im, no_jp2=True, quality_layers=[30, 10, 1], progression="RPCL", precinct_size=(16, 16))
    main, tilehdr, packets = _split_packets(data, monkeypatch)
    headers = b"".join(h for h, _b in packets)
    bodies = b"".join(b for _h, b in packets)
    assert len(headers) + 3 < 0xFFFF
    if where == "PPT":
        seg = b"\xff\x61" + (len(headers) + 3).to_bytes(2, "big") + b"\x00" + headers
        tilehdr = tilehdr[:-2] + seg + b"\xff\x93"
    else:
        seg = b"\xff\x60" + (len(headers) + 7).to_bytes(2, "big") + b"\x00" + len(headers).to_bytes(4, "big") + headers
        main = main + seg
    tilehdr = tilehdr[:6] + (len(tilehdr) + len(bodies)).to_bytes(4, "big") + tilehdr[10:]
    packed = main + tilehdr + bodies + b"\xff\xd9"
    got = _check(packed)  # Pillow reads the packed form too
    assert np.array_equal(got, decode_jpeg2000(data, None))


@pytest.mark.parametrize("progression", ["LRCP", "RLCP", "CPRL"])
def test_hostile_layer_count_is_bounded(progression: str) -> None:
    # 65535 layers declared for a stream that has data for one: decoding stops when the data ends.
    data = bytearray(_encode(_pil(_image(20, 20, 3, "noise"), "RGB"), no_jp2=True, progression=progression))
    i = data.index(b"\xff\x52")
    data[i + 6 : i + 8] = b"\xff\xff"
    t0 = time.perf_counter()
    try:
        decode_jpeg2000(bytes(data), None)
    except CorruptImage:
        pass
    assert time.perf_counter() - t0 < 2.0
