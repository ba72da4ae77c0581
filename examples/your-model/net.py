"""net.py - a small residual convolutional net with batch normalisation,
the kind of module a PyTorch user brings: spirt-torch(1) builds it with
model() (no loss(): cross-entropy).  Its BatchNorm running statistics are
the model's state (spirt-model(5)): they travel beside the gradients and
are combined with them."""
import torch.nn as nn


class Block(nn.Module):
    """conv-BN-ReLU-conv-BN, plus the input (a residual block)."""

    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
            nn.ReLU(), nn.Conv2d(c, c, 3, padding=1, bias=False),
            nn.BatchNorm2d(c))

    def forward(self, x):
        return nn.functional.relu(x + self.body(x))


def model():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
        nn.ReLU(), nn.MaxPool2d(2),              # 8 x 14 x 14
        Block(8), nn.MaxPool2d(2),               # 8 x 7 x 7
        nn.Flatten(), nn.Linear(8 * 7 * 7, 10))
