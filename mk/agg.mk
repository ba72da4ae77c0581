# mk/agg.mk - build fragment for the agg tools (included by Makefile)
AGG_LIBHDR =
AGG_LIBOBJ =
AGG_BIN =
AGG_MAN1 =
AGG_MAN5 =
AGG_UNIT =
AGG_BENCH =
