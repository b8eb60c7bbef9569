package widget
