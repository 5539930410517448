// TestPch.cpp: the object the tests' precompiled header is built with (tests/CMakeLists.txt).
