"""spirt - the Python side of spirt.

spirt.tensor   read and write spirt tensor records (spirt-tensor(5))
spirt.torch    a PyTorch nn.Module as a spirt function (spirt-torch(1))
"""
__version__ = "0.1.0"
