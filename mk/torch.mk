# mk/torch.mk - the PyTorch adapter (included by Makefile): spirt-torch
# runs python3 -m spirt.torch; the package python/spirt/ is installed in
# $(PYTHONDIR), where Debian's python3 finds it
TORCH_BIN = spirt-torch
TORCH_MAN1 = man/spirt-torch.1
PYFILES = python/spirt/__init__.py python/spirt/tensor.py \
	python/spirt/torch.py

spirt-torch: cmd/spirt-torch.sh config.mk
	cp cmd/spirt-torch.sh $@
	chmod 755 $@
