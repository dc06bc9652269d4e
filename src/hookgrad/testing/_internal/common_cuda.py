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


def _get_torch_rocm_version():
    return (0, 0)


@__import__("contextlib").contextmanager
def tf32_off():
    """TF32 matmuls off for the block (there are none on a CPU build: nothing changes)."""
    yield


@__import__("contextlib").contextmanager
def tf32_on(self, tf32_precision=1e-5):
    """The test's ``precision`` loosened to ``tf32_precision`` for the block, as torch does when it
    turns TF32 on."""
    saved = self.precision
    self.precision = tf32_precision
    try:
        yield
    finally:
        self.precision = saved


def tf32_on_and_off(tf32_precision=1e-5, *, only_if=True):
    """torch runs the test with TF32 off and on where a CUDA device supports it; on a CPU build it
    runs once, as torch's does there."""
    def wrapper(fn):
        return fn
    return wrapper
