"""fx passes."""
