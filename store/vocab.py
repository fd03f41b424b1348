"""The rho-df vocabulary and its fixed term ids (the same in every store).

Fixed ids let the reasoner and the Spark job test a predicate against
rdf:type or rdfs:subClassOf as an integer comparison, before any dictionary
exists.  Serials below FIRST_FREE_SERIAL are reserved for vocabulary.
"""

from __future__ import annotations

from .keys import make_id
from .terms import IRI, iri

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"

RDF_TYPE = iri(RDF + "type")
RDFS_SUBPROPERTYOF = iri(RDFS + "subPropertyOf")
RDFS_SUBCLASSOF = iri(RDFS + "subClassOf")
RDFS_DOMAIN = iri(RDFS + "domain")
RDFS_RANGE = iri(RDFS + "range")

TYPE = make_id(1, IRI)
SPO = make_id(2, IRI)  # rdfs:subPropertyOf
SCO = make_id(3, IRI)  # rdfs:subClassOf
DOM = make_id(4, IRI)  # rdfs:domain
RNG = make_id(5, IRI)  # rdfs:range

FIXED_IDS: dict[str, int] = {
    RDF_TYPE: TYPE,
    RDFS_SUBPROPERTYOF: SPO,
    RDFS_SUBCLASSOF: SCO,
    RDFS_DOMAIN: DOM,
    RDFS_RANGE: RNG,
}

FIRST_FREE_SERIAL = 64
