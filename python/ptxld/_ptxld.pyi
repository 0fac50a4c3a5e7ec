# The extension module (python/src/lib.rs); use the functions of `ptxld` instead.
from typing import List, Optional, Tuple, Union

_Input = Union[str, Tuple[str, bytes]]

__version__: str

def link(inputs: List[_Input], options: List[str]) -> Tuple[Optional[bytes], str, str]: ...
def check(inputs: List[_Input], options: List[str]) -> Tuple[bool, str, str]: ...
