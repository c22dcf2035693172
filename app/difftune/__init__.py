"""The Surrogates page's DiffTune sections: the simulator on one block, and the learning of its table."""
