"""Index contract, embedders, Qdrant stores, search, evidence localisation and answers."""
