"""Tests of the torch decoding engine (engine/)."""
