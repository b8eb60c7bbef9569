package gizmo
