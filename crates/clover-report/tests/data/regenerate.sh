#!/bin/sh
# Regenerates the captured reports in this folder from the projects under */project/.
# Needs: PYTHON (a venv's python with pytest and pytest-cov; default /tmp/sbx-venv/bin/python),
# g++, libgtest-dev, gcovr and cmake. Paths inside the reports name the scratch copy
# (/tmp/gen/...), which the tests pass as the repository root.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-/tmp/sbx-venv/bin/python}
rm -rf /tmp/gen && mkdir -p /tmp/gen
cp -r "$here/pytest/project" /tmp/gen/py
cp -r "$here/gtest/project" /tmp/gen/cpp

cd /tmp/gen/py
export PYTHONPATH=src
pt() { "$PYTHON" -m pytest -p no:cacheprovider -q "$@" >/dev/null || true; }
pt tests --junitxml=junit-collection-error.xml
pt tests/test_calc.py -o junit_family=xunit1 --junitxml=junit-xunit1.xml
pt tests/test_calc.py -o junit_family=xunit2 --junitxml=junit-xunit2.xml --cov=src/calc --cov-report=xml:coverage.xml
printf '[run]\nrelative_files = True\n' > .coveragerc
pt tests/test_calc.py --cov --cov-report=xml:coverage-relative.xml
cp junit-*.xml coverage.xml coverage-relative.xml "$here/pytest/"

cd /tmp/gen/cpp
g++ -std=c++17 --coverage -O0 -o calc_test tests/calc_test.cc src/calc.cc -lgtest -lgtest_main -pthread
./calc_test --gtest_output=xml:gtest.xml >/dev/null || true
gcovr -r . --xml -o gcovr.xml --filter src/
mkdir -p build && cd build && cmake .. >/dev/null && make >/dev/null
ctest --output-junit ctest.xml >/dev/null || true
cd .. && cp gtest.xml gcovr.xml "$here/gtest/" && cp build/ctest.xml "$here/ctest/"
