"""``torch.compiler.config``: the user-facing compiler settings, kept with torch's defaults; hookgrad
compiles nothing, so they change no behaviour."""
from hookgrad._config_module import install

install(__name__, {"job_id": None, "force_disable_caches": False, "dynamic_sources": "", "unbacked_sources": "",
                   "cache_key_tag": "", "pgo_extra_read_key": None, "pgo_extra_write_key": None})
