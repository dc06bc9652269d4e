"""``torch.testing._internal.common_cuda`` for a build without CUDA: every capability is absent."""
TEST_CUDA = False
TEST_MULTIGPU = False
TEST_CUDNN = False
TEST_CUDNN_VERSION = 0
TEST_CUSPARSE_GENERIC = False
TEST_NUMBA_CUDA = False
CUDA11OrLater = False
SM53OrLater = SM60OrLater = SM70OrLater = SM75OrLater = SM80OrLater = SM89OrLater = SM90OrLater = False
PLATFORM_SUPPORTS_FLASH_ATTENTION = False
PLATFORM_SUPPORTS_MEM_EFF_ATTENTION = False
PLATFORM_SUPPORTS_FUSED_ATTENTION = False
PLATFORM_SUPPORTS_BF16 = False
PLATFORM_SUPPORTS_FP8 = False


def _get_torch_cuda_version():
    return (0, 0)


def tf32_is_not_fp32():
    return False


def with_tf32_off(fn):
    return fn
