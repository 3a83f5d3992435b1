"""What tools/bench_language.py measures language identification on: short sentences as Home Assistant speaks them,
per language of Qwen3-TTS, and texts too short to tell a language by."""
from __future__ import annotations

LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "ru", "zh", "ja", "ko")

# What Home Assistant says: intent replies, LLM answers, automations' announcements. Numbers, units and device names
# on purpose: they are what makes short sentences hard.
SENTENCES: dict[str, list[str]] = {
    "en": [
        "The garage door is open.", "Turned on the kitchen lights.", "It is 21.5 °C in the living room.",
        "The washing machine is done.", "Your timer for 10 minutes has finished.", "I have set the alarm for 7:30.",
        "The front door is locked.", "Humidity in the bathroom is 68 %.", "The battery of the smoke detector is low.",
        "Good morning! Today it will be sunny with a high of 24 degrees.", "The bedroom window is still open.",
        "Someone is at the door.", "The dishwasher will finish in 25 minutes.", "Heating set to 20 degrees.",
        "The solar panels produced 12.4 kWh today.", "Sorry, I couldn't find a device called lamp.",
        "The living room TV is off.", "Rain is expected at 3 pm.", "The vacuum is back on its dock.",
        "All lights are off.",
        # device names, English loanwords, bare readings: the harder third
        "The Shelly Plug in the office draws 230 W.", "Hue lamp in the hallway is on.",
        "Okay, I turned off the smart TV.", "Roborock cleaned the kitchen.", "The sensor reports 1013 hPa.",
        "The temperature is 4 °C.", "Turning on the fan.", "It's 7:30.", "Tomorrow will be rainy.",
        "The blinds are closed.",
    ],
    "de": [
        "Das Licht im Wohnzimmer ist aus.", "Es sind 21,5 °C im Bad.", "Die Haustür ist abgeschlossen.",
        "Die Waschmaschine ist fertig.", "Dein Timer für 10 Minuten ist abgelaufen.",
        "Der Wecker ist auf 7:30 Uhr gestellt.", "Das Garagentor steht offen.",
        "Die Luftfeuchtigkeit im Bad beträgt 68 %.", "Die Batterie des Rauchmelders ist schwach.",
        "Guten Morgen! Heute wird es sonnig bei bis zu 24 Grad.", "Das Schlafzimmerfenster ist noch offen.",
        "Es hat an der Tür geklingelt.", "Die Spülmaschine ist in 25 Minuten fertig.",
        "Die Heizung ist auf 20 Grad gestellt.", "Die Solaranlage hat heute 12,4 kWh erzeugt.",
        "Ich habe kein Gerät namens Lampe gefunden.", "Der Fernseher im Wohnzimmer ist aus.",
        "Um 15 Uhr soll es regnen.", "Der Staubsauger ist wieder in der Station.", "Alle Lichter sind aus.",
        # device names, English loanwords, bare readings: the harder third
        "Der Shelly Plug im Büro zieht gerade 230 W.", "Die Hue Lampe im Flur ist an.",
        "Ok, ich habe das Smart TV ausgeschaltet.", "Roborock hat die Küche gesaugt.", "Der Sensor meldet 1013 hPa.",
        "Die Temperatur liegt bei 4 °C.", "Ich schalte den Ventilator ein.", "Es ist 7:30 Uhr.",
        "Morgen wird es regnerisch.", "Die Jalousien sind geschlossen.",
    ],
    "fr": [
        "La porte du garage est ouverte.", "Il fait 19 degrés dans la cuisine.", "J'ai allumé les lumières du salon.",
        "La machine à laver a terminé.", "Votre minuteur de 10 minutes est terminé.", "Le réveil est réglé à 7 h 30.",
        "La porte d'entrée est verrouillée.", "L'humidité dans la salle de bain est de 68 %.",
        "La batterie du détecteur de fumée est faible.", "Bonjour ! Aujourd'hui il fera beau avec 24 degrés.",
        "La fenêtre de la chambre est encore ouverte.", "Quelqu'un sonne à la porte.",
        "Le lave-vaisselle aura fini dans 25 minutes.", "Le chauffage est réglé sur 20 degrés.",
        "Les panneaux solaires ont produit 12,4 kWh aujourd'hui.",
        "Désolé, je n'ai trouvé aucun appareil nommé lampe.", "La télévision du salon est éteinte.",
        "De la pluie est prévue à 15 heures.", "L'aspirateur est revenu à sa base.",
        "Toutes les lumières sont éteintes.",
        # device names, English loanwords, bare readings: the harder third
        "La prise Shelly du bureau consomme 230 W.", "La lampe Hue du couloir est allumée.",
        "D'accord, j'ai éteint la télé.", "Roborock a nettoyé la cuisine.", "Le capteur indique 1013 hPa.",
        "La température est de 4 °C.", "J'allume le ventilateur.", "Il est 7 h 30.", "Demain il pleuvra.",
        "Les volets sont fermés.",
    ],
    "es": [
        "La puerta del garaje está abierta.", "Hace 21,5 °C en el salón.", "He encendido las luces de la cocina.",
        "La lavadora ha terminado.", "Tu temporizador de 10 minutos ha terminado.",
        "La alarma está puesta a las 7:30.", "La puerta principal está cerrada con llave.",
        "La humedad en el baño es del 68 %.", "La batería del detector de humo está baja.",
        "¡Buenos días! Hoy hará sol con una máxima de 24 grados.", "La ventana del dormitorio sigue abierta.",
        "Alguien está llamando a la puerta.", "El lavavajillas terminará en 25 minutos.",
        "La calefacción está a 20 grados.", "Los paneles solares han producido 12,4 kWh hoy.",
        "Lo siento, no encontré ningún dispositivo llamado lámpara.", "La televisión del salón está apagada.",
        "Se espera lluvia a las 15 horas.", "La aspiradora ha vuelto a su base.", "Todas las luces están apagadas.",
        # device names, English loanwords, bare readings: the harder third
        "El enchufe Shelly de la oficina consume 230 W.", "La lámpara Hue del pasillo está encendida.",
        "Vale, he apagado la tele.", "Roborock ha limpiado la cocina.", "El sensor marca 1013 hPa.",
        "La temperatura es de 4 °C.", "Enciendo el ventilador.", "Son las 7:30.", "Mañana lloverá.",
        "Las persianas están cerradas.",
    ],
    "it": [
        "La porta del garage è aperta.", "Ci sono 21,5 °C in soggiorno.", "Ho acceso le luci della cucina.",
        "La lavatrice ha finito.", "Il tuo timer di 10 minuti è scaduto.", "La sveglia è impostata alle 7:30.",
        "La porta d'ingresso è chiusa a chiave.", "L'umidità in bagno è del 68 %.",
        "La batteria del rilevatore di fumo è scarica.",
        "Buongiorno! Oggi ci sarà il sole con una massima di 24 gradi.",
        "La finestra della camera da letto è ancora aperta.", "Qualcuno ha suonato il campanello.",
        "La lavastoviglie finirà tra 25 minuti.", "Il riscaldamento è impostato a 20 gradi.",
        "I pannelli solari hanno prodotto 12,4 kWh oggi.",
        "Mi dispiace, non ho trovato nessun dispositivo chiamato lampada.", "La televisione del soggiorno è spenta.",
        "È prevista pioggia alle 15.", "L'aspirapolvere è tornato alla base.", "Tutte le luci sono spente.",
        # device names, English loanwords, bare readings: the harder third
        "La presa Shelly in ufficio assorbe 230 W.", "La lampada Hue nel corridoio è accesa.", "Ok, ho spento la TV.",
        "Roborock ha pulito la cucina.", "Il sensore segna 1013 hPa.", "La temperatura è di 4 °C.",
        "Accendo il ventilatore.", "Sono le 7:30.", "Domani pioverà.", "Le tapparelle sono chiuse.",
    ],
    "pt": [
        "A porta da garagem está aberta.", "Estão 21,5 °C na sala.", "Acendi as luzes da cozinha.",
        "A máquina de lavar terminou.", "O seu temporizador de 10 minutos terminou.",
        "O alarme está definido para as 7:30.", "A porta da frente está trancada.", "A umidade no banheiro é de 68 %.",
        "A bateria do detector de fumaça está fraca.", "Bom dia! Hoje vai fazer sol com máxima de 24 graus.",
        "A janela do quarto ainda está aberta.", "Alguém tocou a campainha.",
        "A máquina de lavar louça termina em 25 minutos.", "O aquecimento está definido para 20 graus.",
        "Os painéis solares produziram 12,4 kWh hoje.", "Desculpe, não encontrei nenhum dispositivo chamado lâmpada.",
        "A televisão da sala está desligada.", "Está prevista chuva para as 15 horas.",
        "O aspirador voltou para a base.", "Todas as luzes estão apagadas.",
        # device names, English loanwords, bare readings: the harder third
        "A tomada Shelly do escritório consome 230 W.", "A lâmpada Hue do corredor está acesa.", "Ok, desliguei a TV.",
        "O Roborock limpou a cozinha.", "O sensor indica 1013 hPa.", "A temperatura é de 4 °C.",
        "Ligando o ventilador.", "São 7:30.", "Amanhã vai chover.", "As persianas estão fechadas.",
    ],
    "ru": [
        "Дверь гаража открыта.", "В гостиной 21,5 °C.", "Я включил свет на кухне.", "Стиральная машина закончила.",
        "Ваш таймер на 10 минут истёк.", "Будильник установлен на 7:30.", "Входная дверь заперта.",
        "Влажность в ванной 68 %.", "Батарея датчика дыма разряжена.",
        "Доброе утро! Сегодня будет солнечно, до 24 градусов.", "Окно в спальне всё ещё открыто.",
        "Кто-то звонит в дверь.", "Посудомоечная машина закончит через 25 минут.",
        "Отопление установлено на 20 градусов.", "Солнечные панели сегодня выработали 12,4 кВт·ч.",
        "Извините, я не нашёл устройство с названием лампа.", "Телевизор в гостиной выключен.",
        "В 15 часов ожидается дождь.", "Пылесос вернулся на базу.", "Весь свет выключен.",
        # device names, English loanwords, bare readings: the harder third
        "Розетка Shelly в офисе потребляет 230 Вт.", "Лампа Hue в коридоре включена.", "Хорошо, я выключил Smart TV.",
        "Roborock убрал кухню.", "Датчик показывает 1013 гПа.", "Температура 4 °C.", "Включаю вентилятор.",
        "Сейчас 7:30.", "Завтра будет дождь.", "Жалюзи закрыты.",
    ],
    "zh": [
        "客厅的灯已经关了。", "浴室现在是21.5°C。", "车库门开着。",
        "洗衣机已经洗完了。", "闹钟设在早上7:30。", "前门已经锁好了。",
    ],
    "ja": [
        "リビングの電気を消しました。", "お風呂は21.5°Cです。", "ガレージのドアが開いています。",
        "洗濯機が終わりました。", "アラームを7時30分にセットしました。", "玄関の鍵を閉めました。",
    ],
    "ko": [
        "거실 불을 껐습니다.", "욕실은 21.5°C입니다.", "차고 문이 열려 있습니다.",
        "세탁기가 끝났습니다.", "알람을 7시 30분으로 맞췄습니다.", "현관문이 잠겼습니다.",
    ],
}

# Too little to tell a language by: every one should give no answer.
UNDECIDABLE = ["OK", "21.5 °C", "7:30", "Done.", "Ja.", "Alarm!", "100 %", "Timer", "Hallo", "12,4 kWh", "Garage"]
