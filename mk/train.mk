# mk/train.mk - the training workflow script and the function checker
# (included by Makefile)
TRAIN_BIN = spirt-train spirt-conform
TRAIN_MAN1 = man/spirt-train.1 man/spirt-conform.1

spirt-train: cmd/spirt-train.sh config.mk
	sed 's/@VERSION@/$(VERSION)/' cmd/spirt-train.sh > $@
	chmod 755 $@

spirt-conform: cmd/spirt-conform.sh config.mk
	sed 's/@VERSION@/$(VERSION)/' cmd/spirt-conform.sh > $@
	chmod 755 $@
