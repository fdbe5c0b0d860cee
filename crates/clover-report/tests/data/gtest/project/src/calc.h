#pragma once
int add(int a, int b);
int clamp(int v, int lo, int hi);
