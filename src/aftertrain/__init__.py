"""aftertrain: executable claims about compressing a small character-level GPT."""

from aftertrain import model, text

__all__ = ["model", "text"]
__version__ = "0.1.0"
