"""``torch.distributed.elastic``: of torchelastic, hookgrad has the error recording that training
scripts decorate their entry point with (``multiprocessing.errors.record``)."""
