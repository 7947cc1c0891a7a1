"""`make bench`: the stack's, the snapshot's and the job's figures. Imports every layer below it."""
