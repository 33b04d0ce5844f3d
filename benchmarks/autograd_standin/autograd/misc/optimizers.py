"""autograd.misc.optimizers: not mapped."""
