# mk/data.mk - build fragment for the data tools (included by Makefile)
DATA_LIBHDR =
DATA_LIBOBJ =
DATA_BIN =
DATA_MAN1 =
DATA_MAN5 =
DATA_UNIT =
DATA_BENCH =
