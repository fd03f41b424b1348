"""trine: an embedded RDF triple store that keeps its RDFS (rho-df) materialisation current.

    >>> from trine import Store
    >>> with Store.open("my.db") as store:
    ...     store.load(["data.nt.gz"])
"""

from .api import Store

__version__ = "0.1.0"
__all__ = ["Store", "__version__"]
