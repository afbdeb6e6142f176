"""Reading calls and results: what a call does (calls), what a result says (results), their canonical forms and
digests (signature), what is volatile in them (volatile), what an edit leaves in a file (edits), and the two
protocols tools and models use to say more (outcome, report)."""
