"""What a household hears, language by language: Home Assistant's own intent responses (home-assistant/intents:
HassGetWeather, HassClimateGetTemperature, HassGetCurrentTime/Date, HassTimerStatus) and typical sensor, energy
and calendar announcements, each with the words a native speaker says for it."""
from __future__ import annotations

import pytest

from wyoming_chorus.frontend.normalize import normalize

TABLE = {
    "en": [
        ("21.5 °C and sunny", "twenty-one point five degrees Celsius and sunny"),
        ("7:05 PM", "seven oh five PM"),
        ("The living room is 21 °C, the thermostat is set to 20-22 °C.",
         "The living room is twenty-one degrees Celsius, the thermostat is set to twenty to twenty-two degrees "
         "Celsius."),
        ("Tonight -3 °C, wind 15 km/h, pressure 1013 hPa.",
         "Tonight minus three degrees Celsius, wind fifteen kilometres per hour, pressure one thousand and thirteen "
         "hectopascals."),
        ("Today you used 12.4 kWh; the dishwasher draws 1,800 W at 230 V and 7.8 A.",
         "Today you used twelve point four kilowatt hours; the dishwasher draws one thousand eight hundred watts at "
         "two hundred and thirty volts and seven point eight amps."),
        ("Electricity costs 0.32 €/kWh right now.", "Electricity costs thirty-two cents per kilowatt hour right now."),
        ("1 hour and 5 minutes left", "one hour and five minutes left"),
        ("Dentist on May 3, 2026 at 10:30 am.", "Dentist on May third, twenty twenty-six at ten thirty AM."),
        ("PM2.5 is 12 µg/m³, CO2 is 650 ppm, 40 dB, 320 lx, rain 2.5 mm.",
         "PM2.5 is twelve micrograms per cubic metre, CO2 is six hundred and fifty parts per million, forty "
         "decibels, three hundred and twenty lux, rain two point five millimetres."),
        # 24-hour times on the 12-hour clock, as English speakers say the time of day
        ("The meeting starts at 14:00.", "The meeting starts at two PM."),
        ("Sunset at 21:15, the heating turns off at 00:00 and back on at 06:45.",
         "Sunset at nine fifteen PM, the heating turns off at midnight and back on at six forty-five."),
        ("Lunch is at 12:00, the dishwasher ends at 00:30.",
         "Lunch is at noon, the dishwasher ends at twelve thirty AM."),
        # a day before its month: "the third of May"
        ("Bin collection on 3 May 2026.", "Bin collection on the third of May, twenty twenty-six."),
        ("Today is Sunday, 3rd May.", "Today is Sunday, the third of May."),
        # a unit with no number before it
        ("Electricity costs 30 cents per kWh.", "Electricity costs thirty cents per kilowatt hour."),
        ("Agile price: 28p/kWh now, 15.5p/kWh at 02:00.",
         "Agile price: twenty-eight pence per kilowatt hour now, fifteen point five pence per kilowatt hour at two "
         "o'clock."),
    ],
    "de": [
        ("21.5 °C und sonnig", "einundzwanzig Komma fünf Grad Celsius und sonnig"),
        ("Es ist 07:05", "Es ist sieben Uhr fünf"),
        ("Es ist Montag der 3. Mai 2026", "Es ist Montag der dritte Mai zweitausendsechsundzwanzig"),
        ("1 Stunde und 5 Minuten verbleiben.", "eine Stunde und fünf Minuten verbleiben."),
        ("Im Wohnzimmer sind es 21 °C, die Heizung regelt auf 20-22 °C.",
         "Im Wohnzimmer sind es einundzwanzig Grad Celsius, die Heizung regelt auf zwanzig bis zweiundzwanzig Grad "
         "Celsius."),
        ("Heute Nacht -3 °C, Wind 15 km/h, Luftdruck 1013 hPa.",
         "Heute Nacht minus drei Grad Celsius, Wind fünfzehn Kilometer pro Stunde, Luftdruck eintausenddreizehn "
         "Hektopascal."),
        ("Heute 12,4 kWh verbraucht; der Strompreis liegt bei 0,32 €/kWh.",
         "Heute zwölf Komma vier Kilowattstunden verbraucht; der Strompreis liegt bei zweiunddreißig Cent pro "
         "Kilowattstunde."),
        ("Die Waschmaschine zieht 1.800 W bei 230 V.",
         "Die Waschmaschine zieht eintausendachthundert Watt bei zweihundertdreißig Volt."),
        ("Termin am 29.11. um 14:30 Uhr", "Termin am neunundzwanzigsten November um vierzehn Uhr dreißig"),
        ("Luftfeuchtigkeit 55 %, 1 kWh", "Luftfeuchtigkeit fünfundfünfzig Prozent, eine Kilowattstunde"),
        # a one before a noun is "ein", "eine", in the case its preposition asks (carried across "und")
        ("Der Wecker klingelt in 1 Stunde.", "Der Wecker klingelt in einer Stunde."),
        ("Die Haustür ist seit 1 Stunde und 1 Minute offen.",
         "Die Haustür ist seit einer Stunde und einer Minute offen."),
        ("Die Waschmaschine ist seit 1 Tag fertig, nach 1 h Pause, für 1 Euro.",
         "Die Waschmaschine ist seit einem Tag fertig, nach einer Stunde Pause, für einen Euro."),
        ("Es gibt 1 neue Nachricht, 1 Fenster ist offen.", "Es gibt eine neue Nachricht, ein Fenster ist offen."),
        ("Es gibt 1 Termin heute, du hast 1 Paket, Raum 1 ist frei.",
         "Es gibt einen Termin heute, du hast ein Paket, Raum eins ist frei."),
        ("Ab 1 Uhr sinkt es um 1 Grad.", "Ab ein Uhr sinkt es um ein Grad."),
        # ordinals after an article
        ("Am Sonntag ist der 1. Advent.", "Am Sonntag ist der erste Advent."),
        ("Das Paket liegt im 3. Stock, in der 2. Etage ist es zum 1. Mal warm.",
         "Das Paket liegt im dritten Stock, in der zweiten Etage ist es zum ersten Mal warm."),
        ("Es sind 3. Morgen wird es kälter.", "Es sind drei. Morgen wird es kälter."),  # no article: a sentence end
        ("Strompreis: 32 Cent/kWh, pro kWh also 0,32 €; nachts 1 ct/kWh weniger.",
         "Strompreis: zweiunddreißig Cent pro Kilowattstunde, pro Kilowattstunde also zweiunddreißig Cent; nachts ein "
         "Cent pro Kilowattstunde weniger."),
    ],
    "fr": [
        ("Il est 07:30", "Il est sept heures trente"),
        ("Il est 01:05", "Il est une heure cinq"),
        ("Nous sommes le premier mai 2026", "Nous sommes le premier mai deux mille vingt-six"),
        ("Nous sommes le 3 mai 2026", "Nous sommes le trois mai deux mille vingt-six"),
        ("21,5 °C et ensoleillé", "vingt et un virgule cinq degrés Celsius et ensoleillé"),
        ("Il fait 1,5 °C, le vent souffle à 21 km/h.",
         "Il fait un virgule cinq degré Celsius, le vent souffle à vingt et un kilomètres par heure."),
        ("Le thermostat vise 20-22 °C, il fait -3 °C dehors.",
         "Le thermostat vise vingt à vingt-deux degrés Celsius, il fait moins trois degrés Celsius dehors."),
        ("Consommation : 12,4 kWh, prix 0,25 €/kWh.",
         "Consommation : douze virgule quatre kilowattheures, prix vingt-cinq centimes par kilowattheure."),
        ("Il reste 1 heure et 21 minutes.", "Il reste une heure et vingt et une minutes."),
        ("Rendez-vous le 29/11/2026 à 19h30.",
         "Rendez-vous le vingt-neuf novembre deux mille vingt-six à dix-neuf heures trente."),
        ("Humidité 55 %, le 1er étage", "Humidité cinquante-cinq pour cent, le premier étage"),
        # a feminine noun after a number
        ("Vous avez 1 nouveau message, 1 fenêtre est ouverte et 1 alarme active depuis 21 semaines.",
         "Vous avez un nouveau message, une fenêtre est ouverte et une alarme active depuis vingt et une semaines."),
    ],
    "es": [
        ("Son las 7 y 05 minutos de la tarde", "Son las siete y cinco minutos de la tarde"),
        ("Es la 1 de la tarde", "Es la una de la tarde"),
        ("Es 1 de mayo de 2026", "Es primero de mayo de dos mil veintiséis"),
        ("21,5 °C y soleado", "veintiuno coma cinco grados Celsius y soleado"),
        ("En el salón hay 21 °C; el termostato está entre 20-22 °C.",
         "En el salón hay veintiún grados Celsius; el termostato está entre veinte a veintidós grados Celsius."),
        ("Esta noche -1 °C, viento de 21 km/h, presión 1013 hPa.",
         "Esta noche menos un grado Celsius, viento de veintiún kilómetros por hora, presión mil trece "
         "hectopascales."),
        ("Hoy has consumido 12,4 kWh; la luz cuesta 0,15 €/kWh.",
         "Hoy has consumido doce coma cuatro kilovatios hora; la luz cuesta quince céntimos por kilovatio hora."),
        ("Quedan 1 hora y 21 minutos.", "Quedan una hora y veintiún minutos."),
        ("Cita el 29/11/2026 a las 19:30 h.",
         "Cita el veintinueve de noviembre de dos mil veintiséis a las diecinueve y treinta."),
        ("Humedad del 55 %, 3,50 €", "Humedad del cincuenta y cinco por ciento, tres euros con cincuenta céntimos"),
        # apocope before a masculine noun; a noun's gender after a number
        ("Es el 1.º aviso: el 3.er piso sigue abierto, es el 1.º de la lista.",
         "Es el primer aviso: el tercer piso sigue abierto, es el primero de la lista."),
        ("Tienes 1 mensaje nuevo y 1 ventana abierta desde hace 21 noches.",
         "Tienes un mensaje nuevo y una ventana abierta desde hace veintiuna noches."),
        ("El 1° piso tiene 1° más.", "El primer piso tiene un grado más."),
    ],
    "it": [
        ("Sono le 07:30", "Sono le sette e trenta"),
        ("21,5 °C e soleggiato", "ventuno virgola cinque gradi Celsius e soleggiato"),
        ("In soggiorno ci sono 21 °C, domani 20-22 °C.",
         "In soggiorno ci sono ventuno gradi Celsius, domani da venti a ventidue gradi Celsius."),
        ("Stanotte -1 °C, vento a 15 km/h, pressione 1013 hPa.",
         "Stanotte meno un grado Celsius, vento a quindici chilometri orari, pressione milletredici ettopascal."),
        ("Oggi hai consumato 12,4 kWh a 0,25 €/kWh.",
         "Oggi hai consumato dodici virgola quattro chilowattora a venticinque centesimi al chilowattora."),
        ("Manca 1 ora e 5 minuti.", "Manca un'ora e cinque minuti."),
        ("Appuntamento il 29/11/2026 alle 19:30.",
         "Appuntamento il ventinove novembre duemilaventisei alle diciannove e trenta."),
        ("Il 1° maggio, umidità 55 %", "Il primo maggio, umidità cinquantacinque per cento"),
        ("Hai 1 messaggio nuovo, 1 finestra aperta e 1 sconto.",
         "Hai un messaggio nuovo, una finestra aperta e uno sconto."),
        ("Il 1° piano è a 1° sopra lo zero.", "Il primo piano è a un grado sopra lo zero."),
    ],
    "pt": [
        ("São 7 e meia", "São sete e meia"),
        ("21,5 °C e ensolarado", "vinte e um vírgula cinco graus Celsius e ensolarado"),
        ("Na sala estão 21 °C, o termóstato está entre 20-22 °C.",
         "Na sala estão vinte e um graus Celsius, o termóstato está entre vinte a vinte e dois graus Celsius."),
        ("Esta noite -1 °C, vento de 15 km/h, pressão 1013 hPa.",
         "Esta noite menos um grau Celsius, vento de quinze quilómetros por hora, pressão mil e treze "
         "hectopascais."),
        ("Hoje gastou 12,4 kWh a 0,22 €/kWh.",
         "Hoje gastou doze vírgula quatro quilowatts-hora a vinte e dois cêntimos por quilowatt-hora."),
        ("Falta 1 hora e 22 minutos.", "Falta uma hora e vinte e dois minutos."),
        ("Consulta a 29/11/2026 às 19h30.",
         "Consulta a vinte e nove de novembro de dois mil e vinte e seis às dezanove e trinta."),
        ("às 22:00, 1º de maio", "às vinte e duas horas, primeiro de maio"),
        ("Tem 1 mensagem nova, 2 portas abertas e 1 dia de atraso.",
         "Tem uma mensagem nova, duas portas abertas e um dia de atraso."),
    ],
    "pt_BR": [
        ("Consulta em 16/11/2026 às 19h30, 16 km", "Consulta em dezesseis de novembro de dois mil e vinte e seis às "
         "dezenove e trinta, dezesseis quilômetros"),
    ],
    "ru": [
        ("Сейчас плюс 21,5, солнечно", "Сейчас плюс двадцать одна целая пять десятых, солнечно"),
        ("В гостиной 21 °C, в спальне 22 °C, на улице -5 °C.",
         "В гостиной двадцать один градус Цельсия, в спальне двадцать два градуса Цельсия, на улице минус пять "
         "градусов Цельсия."),
        ("Температура 21,5 °C, влажность 45 %.",
         "Температура двадцать одна целая пять десятых градуса Цельсия, влажность сорок пять процентов."),
        ("Термостат поддерживает 20-22 °C.", "Термостат поддерживает от двадцати до двадцати двух градусов Цельсия."),
        ("Ветер 3 м/с, давление 1013 гПа.",
         "Ветер три метра в секунду, давление одна тысяча тринадцать гектопаскалей."),
        ("Сегодня израсходовано 12,4 кВт·ч по 5,50 ₽/kWh.",
         "Сегодня израсходовано двенадцать целых четыре десятых киловатт-часа по пять рублей пятьдесят копеек за "
         "киловатт-час."),
        ("Осталось 1 минута и 21 секунда.", "Осталось одна минута и двадцать одна секунда."),
        ("Встреча 29.11.2026 в 19:30.",
         "Встреча двадцать девятого ноября две тысячи двадцать шестого года в девятнадцать тридцать."),
        ("Сегодня 3 мая, будильник на 07:05.", "Сегодня третье мая, будильник на семь ноль пять."),
        ("Мощность 1 кВт, 2 кВт, 5 кВт, 3-й этаж",
         "Мощность один киловатт, два киловатта, пять киловатт, третий этаж"),
        # the year's "года" said once; a year before its noun is an ordinal
        ("Вывоз мусора 3 мая 2026 года, следующий 10 мая 2026 г. в 08:00.",
         "Вывоз мусора третьего мая две тысячи двадцать шестого года, следующий десятого мая две тысячи двадцать "
         "шестого года в восемь часов."),
        ("В 2026 году счётчик заменили, с 2020 года тариф вырос.",
         "В две тысячи двадцать шестом году счётчик заменили, с две тысячи двадцатого года тариф вырос."),
        # units as letters, and a price per unit written with "руб."
        ("Тариф 5,50 руб./кВт·ч, то есть 5,50 ₽ за кВт·ч; сегодня 12 кВт*ч.",
         "Тариф пять рублей пятьдесят копеек за киловатт-час, то есть пять рублей пятьдесят копеек за киловатт-час; "
         "сегодня двенадцать киловатт-часов."),
        # the genitive after до, от, около; a number's gender from the noun after it
        ("Ночью до 5 °C, влажность около 20 %.", "Ночью до пяти градусов Цельсия, влажность около двадцати процентов."),
        ("Температура упадёт до 5 или 6 °C.", "Температура упадёт до пяти или шести градусов Цельсия."),
        ("У вас 1 новое сообщение, 2 двери открыты, 1 окно тоже.",
         "У вас одно новое сообщение, две двери открыты, одно окно тоже."),
        ("Дверь открыта уже 1 час и 1 минуту, свет погаснет через 21 минуту.",
         "Дверь открыта уже один час и одну минуту, свет погаснет через двадцать одну минуту."),
    ],
    "zh": [
        ("现在21.5 °C，晴。", "现在21.5摄氏度，晴。"),
        ("明天最低-3 °C，风速15 km/h，湿度55%。", "明天最低零下3摄氏度，风速每小时15公里，湿度百分之55。"),
        ("闹钟定在07:30，会议在2026-11-29。", "闹钟定在7点30分，会议在2026年11月29日。"),
        ("今天用电12.4 kWh。", "今天用电12.4千瓦时。"),
        ("电价0.5元/kWh，每kWh比昨天便宜。", "电价0.5元每千瓦时，每千瓦时比昨天便宜。"),
    ],
    "ja": [
        ("現在21.5 °C、晴れです。", "現在21.5度、晴れです。"),
        ("制限速度は80 km/h、最低気温は-3 °C、湿度55%です。",
         "制限速度は時速80キロ、最低気温はマイナス3度、湿度55パーセントです。"),
        ("アラームは07:30、会議は2026-11-29です。", "アラームは7時30分、会議は2026年11月29日です。"),
        ("電気代は30円/kWhです。", "電気代はキロワット時あたり30円です。"),
    ],
    "ko": [
        ("현재 21.5 °C, 맑음입니다.", "현재 21.5도, 맑음입니다."),
        ("내일 최저 -3 °C, 습도 55%.", "내일 최저 영하 3도, 습도 55퍼센트."),
        ("알람은 07:30, 회의는 2026-11-29입니다.", "알람은 7시 30분, 회의는 2026년 11월 29일입니다."),
        ("전기 요금은 120원/kWh입니다.", "전기 요금은 킬로와트시당 120원입니다."),
    ],
}


@pytest.mark.parametrize(("language", "text", "spoken"),
                         [(language, text, spoken) for language, rows in TABLE.items() for text, spoken in rows])
def test_home_assistant_sentences_are_spoken_as_a_native_speaker_says_them(language, text, spoken):
    assert normalize(text, language) == spoken
