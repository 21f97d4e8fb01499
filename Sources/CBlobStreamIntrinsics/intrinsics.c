#include "CBlobStreamIntrinsics.h"
