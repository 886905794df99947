## experiments/local.mk
