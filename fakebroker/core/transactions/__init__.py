"""The transaction coordinator (KIP-98, KIP-447, KIP-890): transactional ids, their states
and the markers that end a transaction in every partition it wrote."""
