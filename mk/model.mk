# mk/model.mk - build fragment for the model tools (included by Makefile)
MODEL_LIBHDR =
MODEL_LIBOBJ =
MODEL_BIN =
MODEL_MAN1 =
MODEL_MAN5 =
MODEL_UNIT =
MODEL_BENCH =
