#pragma once
// GDN decode / MTP API: see issue 7; filled by the decode work.
