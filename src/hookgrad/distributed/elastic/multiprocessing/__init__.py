"""``torch.distributed.elastic.multiprocessing``: only its ``errors`` module (see there)."""
