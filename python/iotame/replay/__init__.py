"""Replaying a job's I/O: a Darshan log or an iotame request trace as a replay spec, and how close a replay came."""
