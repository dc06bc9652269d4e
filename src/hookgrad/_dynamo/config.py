"""``torch._dynamo.config``: the settings of torch's bytecode compiler. hookgrad compiles nothing
(``torch.compile`` returns the model), so the settings are kept, with torch's defaults, for the
scripts that read or set them; they change no behaviour."""
from hookgrad._config_module import install

install(__name__, {
    "suppress_errors": False, "cache_size_limit": 8, "recompile_limit": 8, "accumulated_cache_size_limit": 256,
    "accumulated_recompile_limit": 256, "verbose": False, "optimize_ddp": True, "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False, "automatic_dynamic_shapes": True, "assume_static_by_default": True,
    "inline_inbuilt_nn_modules": True, "specialize_int": False, "specialize_float": False,
    "guard_nn_modules": True, "error_on_recompile": False, "force_parameter_static_shapes": True,
    "allow_unspec_int_on_nn_module": False, "replay_record_enabled": False, "raise_on_ctx_manager_usage": True,
    "skip_nnmodule_hook_guards": True, "debug_dir_root": "/tmp/torch_compile_debug",
    "log_compilation_metrics": True, "dynamic_shapes": True, "compiled_autograd": False,
})
