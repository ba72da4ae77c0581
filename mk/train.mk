# mk/train.mk - the training workflow script (included by Makefile)
TRAIN_BIN = spirt-train
TRAIN_MAN1 = man/spirt-train.1

spirt-train: cmd/spirt-train.sh config.mk
	sed 's/@VERSION@/$(VERSION)/' cmd/spirt-train.sh > $@
	chmod 755 $@
